// The node's plan watch (DESIGN §7 point 1), shared by the client and --dry-run: each plan event goes
// to the modules, and what a plan event changes for the node as a whole is done once per turn — a
// thousand plans arriving together at start are one pass over them, not a thousand.
import type { NatsConnection } from '@nats-io/transport-node';
import { watchBucket } from '../../shared/bus/watch/bucket.ts';
import type { Watch } from '../../shared/bus/watch/types.ts';
import { PLANS } from '../../shared/contract/buckets.ts';
import type { Plan } from '../../shared/contract/plan.ts';
import { parseNodeModuleKey } from '../../shared/contract/keys.ts';
import type { Logger } from '../../shared/cli/log.ts';
import type { Modules } from '../schedule/modules.ts';
import type { Sources } from '../sources/index.ts';
import { notePlanEntry } from '../sources/placement.ts';
import type { TemplateCache } from '../fill/templates.ts';
import type { PlansRecord } from './record.ts';

/**
 * Watches `<node>.*` of the plans: a plan's new value is handed to `modules`; when the module needs
 * a run, `onPlan(module, before)` is called, `before` its valid plan until then. Templates no plan
 * names are dropped and the sources told the node's plans, once per turn; the watch is caught up once
 * they were told the plans it read first. From then on, `keepArchives` hears the digests the plans name.
 * With a `record`, the watch resumes from the plans it kept (record.ts) and keeps it current.
 */
export function watchPlans(
  nc: NatsConnection,
  node: string,
  deps: {
    modules: Modules;
    templates: TemplateCache;
    sources: Pick<Sources, 'plansChanged'>;
    keepArchives?: (digests: Set<string>) => void;
    record?: PlansRecord;
  },
  log: Logger,
  onPlan: (module: string, before: Plan | undefined) => void,
): Watch {
  const { modules, templates, sources, record } = deps;
  let pass: NodeJS.Immediate | undefined;
  // Until the watch has read every plan stored, an archive not named yet may be one a plan names.
  let read = false;
  const runPass = () => {
    pass = undefined;
    const digests = modules.digests();
    templates.retain(digests);
    sources.plansChanged(modules.plans());
    if (read) deps.keepArchives?.(digests);
  };
  const watch = watchBucket(
    nc,
    PLANS,
    `${node}.*`,
    (e) => {
      record?.note(e);
      const key = parseNodeModuleKey(e.key);
      if (!key.ok) return log.warn(`${PLANS} ${e.key}: key out of shape: ${key.reason}`);
      const before = modules.plan(key.value.module);
      if (!modules.setPlan(key.value.module, e.value)) return;
      // The entry a plan was read from is the input its placement values name (DESIGN §14).
      const plan = modules.plan(key.value.module);
      if (plan && e.value !== null) notePlanEntry(plan, e);
      pass ??= setImmediate(runPass);
      onPlan(key.value.module, before);
    },
    log,
    record ? { resume: (created) => record.resume(created), onProgress: (seq) => record.progress(seq), onReread: () => record.forget() } : {},
  );
  return {
    // Once the sources were told the plans too: a watch a plan names (a provider's bound entries) is
    // then one the start waits for. The pass still queued is run here, not left to the order of immediates.
    caughtUp: watch.caughtUp.then(() => {
      read = true;
      if (!pass) return deps.keepArchives?.(modules.digests());
      clearImmediate(pass);
      runPass();
    }),
    stop() {
      if (pass) clearImmediate(pass);
      watch.stop();
    },
  };
}
