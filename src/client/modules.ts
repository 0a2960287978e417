// One module's run (DESIGN §7 points 1–5, 10–12): templates → fill → engine → needs and report.
import type { FillFile } from '../shared/fill-protocol.ts';
import { PLANS } from '../shared/buckets.ts';
import { keyDisagreement, nodeModuleKey } from '../shared/keys.ts';
import { MAX_ENGINE_LINE_BYTES } from '../shared/limits.ts';
import type { Logger } from '../shared/log.ts';
import { decodeJson, PlanSchema, type Plan, type Report } from '../shared/schemas.ts';
import { EngineProtocolError, EngineTimeout, EngineUnavailable, type EngineClient } from './engine.ts';
import { fillModule } from './fill.ts';
import type { Reporter } from './reporter.ts';
import type { TemplateCache } from './templates.ts';
import type { NodeValues } from './values.ts';

type FileResult = Report['files'][number];

/** What the client keeps of a module between runs; everything else is read again from the bus. */
type ModuleState = {
  plan?: Plan;
  /** Why the stored plan does not validate. */
  planError?: string;
  build: string;
  /** The plan was deleted: the next run removes the module. */
  removed: boolean;
  /** Each file as last accepted by the engine: path → what was sent. */
  sent: Map<string, string>;
  /** Each file's last result from the engine. */
  results: Map<string, FileResult>;
  /** `kind:name` of every placeholder the module named at its last fill; undefined before one. */
  names?: Set<string>;
};

/** What a module run needs, handed in. */
export type ModulesDeps = {
  node: string;
  engine: EngineClient;
  reporter: Reporter;
  templates: TemplateCache;
  values: NodeValues;
  log: Logger;
};

/** The modules placed on this node and how each one is run. */
export class Modules {
  readonly #states = new Map<string, ModuleState>();
  #engineDown = false;

  constructor(private readonly deps: ModulesDeps) {}

  /** The modules with a plan. */
  names(): string[] {
    return [...this.#states].filter(([, s]) => !s.removed).map(([name]) => name);
  }

  /** Every archive digest a plan names. */
  digests(): Set<string> {
    return new Set([...this.#states.values()].flatMap((s) => (s.plan && !s.removed ? [s.plan.archive.digest] : [])));
  }

  /** Whether the module's last fill named `${kind:name}` (or it has not been filled yet). */
  namesValue(module: string, kind: string, name: string): boolean {
    const state = this.#states.get(module);
    if (!state || state.removed) return false;
    return !state.names || state.names.has(`${kind}:${name}`);
  }

  /** Takes a plan's new value (null: deleted); says whether the module needs a run. */
  setPlan(module: string, bytes: Uint8Array | null): boolean {
    const state = this.#states.get(module);
    if (bytes === null) {
      if (!state) return false;
      state.removed = true;
      return true;
    }
    const next: ModuleState = state && !state.removed ? state : { build: '', removed: false, sent: new Map(), results: new Map() };
    const decoded = decodeJson(PlanSchema, bytes);
    const key = nodeModuleKey(this.deps.node, module);
    const disagreement = decoded.ok ? keyDisagreement({ node: this.deps.node, module }, decoded.value) : undefined;
    if (disagreement) {
      next.planError = `${PLANS} ${key}: ${disagreement}`;
    } else if (!decoded.ok) {
      next.planError = `${PLANS} ${key}: ${decoded.reason}`;
    } else {
      next.planError = undefined;
      next.plan = decoded.value;
      next.build = decoded.value.build;
    }
    this.#states.set(module, next);
    return true;
  }

  /** Runs one module: removal, or a fill of its changed files (every file when `full`). */
  async run(module: string, full: boolean): Promise<void> {
    const state = this.#states.get(module);
    if (!state) return;
    if (state.removed) {
      this.#states.delete(module);
      await this.deps.reporter.removed(module, state.build);
      return;
    }
    if (state.planError || !state.plan) return this.#fail(module, state, state.planError ?? 'no plan');
    const plan = state.plan;
    const templates = await this.deps.templates.get(plan.archive.ref, plan.archive.digest);
    if (this.#states.get(module) !== state || state.plan !== plan) return; // superseded: a newer run is scheduled
    if (!templates.ok) return this.#fail(module, state, templates.reason);

    const outcome = fillModule(plan, templates.value, this.deps.values.resolver(module));
    if (!outcome.ok) return this.#fail(module, state, outcome.reason);
    const { files, waiting, needs } = outcome.value;
    state.names = new Set(needs.map((n) => `${n.kind}:${n.name}`));
    await this.deps.reporter.needs(module, needs);

    const toSend = files.filter((f) => full || state.sent.get(f.path) !== signature(f));
    const size = requestSize(toSend);
    if (size > MAX_REQUEST_BYTES) return this.#fail(module, state, `the fill request would be about ${size} bytes, past the engine's line limit of ${MAX_ENGINE_LINE_BYTES} bytes`);
    if (toSend.length > 0 && !(await this.#send(module, state, plan, toSend))) return;

    const filled: FileResult[] = files.map((f) => state.results.get(f.path) ?? { path: f.path, action: 'pending', digest: f.digest });
    const refused = filled.filter((f) => f.action === 'refused');
    // A file is applied only once the engine confirmed it (DESIGN §9).
    const unconfirmed = filled.filter((f) => f.action === 'pending');
    const reasons = [
      ...(refused.length > 0 ? [`engine refused ${refused.map((f) => `${f.path} (${f.reason ?? 'no reason'})`).join(', ')}`] : []),
      ...(unconfirmed.length > 0 ? [`engine has not confirmed ${unconfirmed.map((f) => f.path).join(', ')}`] : []),
    ];
    const reason = reasons.length > 0 ? `${reasons.join('; ')}; waiting for a knock` : undefined;
    await this.deps.reporter.report(module, {
      build: plan.build,
      state: waiting.length > 0 || reasons.length > 0 ? 'waiting' : 'applied',
      files: filled,
      waiting,
      ...(reason ? { reason } : {}),
    });
  }

  /** Hands the files to the engine; false when the module's run ends here. */
  async #send(module: string, state: ModuleState, plan: Plan, files: FillFile[]): Promise<boolean> {
    const secrets = Object.fromEntries(plan.secrets.map((s) => [s.name, s.vault]));
    let reply;
    try {
      reply = await this.deps.engine.fill({ module, build: plan.build, files, secrets });
    } catch (err) {
      // Whatever the engine did not confirm goes again, whole, on its knock or the next start.
      state.sent.clear();
      if (err instanceof EngineTimeout || err instanceof EngineProtocolError) {
        for (const f of files) state.results.set(f.path, { path: f.path, action: 'pending', digest: f.digest });
        await this.deps.reporter.report(module, {
          build: plan.build, state: 'waiting', files: files.map((f) => state.results.get(f.path)!), waiting: [],
          reason: `${err.message}; waiting for a knock`,
        });
        return false;
      }
      if (!(err instanceof EngineUnavailable)) throw err;
      // One line per outage, not one per module.
      if (!this.#engineDown) this.deps.log.warn(`engine not reachable (${err.message}); waiting for its knock`);
      this.#engineDown = true;
      return false;
    }
    if (this.#engineDown) this.deps.log.notice('engine reachable again');
    this.#engineDown = false;
    if (!reply.ok) {
      state.sent.clear();
      await this.#fail(module, state, `engine: ${reply.error}`);
      return false;
    }
    // The engine client resolves only a reply that confirms every file sent, each once.
    const byPath = new Map(files.map((f) => [f.path, f]));
    for (const result of reply.files) {
      const file = byPath.get(result.path)!;
      state.results.set(result.path, { path: result.path, action: result.action, digest: file.digest, ...(result.reason ? { reason: result.reason } : {}) });
      if (result.action === 'refused') state.sent.delete(result.path);
      else state.sent.set(result.path, signature(file));
    }
    return true;
  }

  async #fail(module: string, state: ModuleState, reason: string): Promise<void> {
    await this.deps.reporter.report(module, { build: state.build, state: 'failed', files: [], waiting: [], reason });
  }
}

/** Room left under the engine's line limit for the request's JSON besides the contents. */
const MAX_REQUEST_BYTES = MAX_ENGINE_LINE_BYTES - 1024 * 1024;

/**
 * The bytes of the files' contents and paths as JSON carries them. Counted exactly only when the
 * raw bytes could reach the limit once escaped (JSON writes a control character in six).
 */
function requestSize(files: readonly FillFile[]): number {
  const parts = files.flatMap((f) => [f.path, ...(typeof f.content === 'string' ? [f.content] : f.content.filter((p) => typeof p === 'string'))]);
  const raw = parts.reduce((n, part) => n + Buffer.byteLength(part), 0) + files.length * 256;
  if (raw * 6 < MAX_REQUEST_BYTES) return raw;
  return parts.reduce((n, part) => n + Buffer.byteLength(JSON.stringify(part)), 0) + files.length * 256;
}

/** What makes a file different for the engine: its bytes and how it is written. */
function signature(f: FillFile): string {
  return `${f.digest} ${f.mode} ${f.change} ${f.fileMode ?? ''} ${f.owner ?? ''} ${f.comment ?? ''}`;
}
