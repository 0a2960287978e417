// Where a new build's time goes (issue 34): bench/fleet.ts listens on the bus (one account: the
// bench's connection hears every subject) while a build reaches the fleet, and stamps each node's
// steps — the seat's write of its plan, its client's first and last direct get of the archive, the
// fill handed to its engine (the engine stub's own stamp), its report's write.
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { APPLIED, DEFAULT_ARCHIVES, MODULES, PLANS } from '../src/shared/contract/buckets.ts';
import { percentile } from './lib.ts';
import { wallNow } from './fleet-worker.ts';

/** The steps of one node's new build, wall-clock ms (absent: not seen). */
type Steps = { plan?: number; firstGet?: number; lastGet?: number; engine?: number; report?: number };

/** What a node's inbox prefix says of the node (`_INBOX_node_<node>.…`, src/shared/bus/inbox.ts). */
const INBOX_NODE = /^_INBOX_node_([^.]+)\./;

/** Stamps each node's steps of the build of `module` from now on; `done(engineTimes)` says them. */
export function traceBuild(nc: NatsConnection, module: string): { done(engine: Map<string, number>, t0: number): string[] } {
  const steps = new Map<string, Steps>();
  const of = (node: string) => steps.get(node) ?? (steps.set(node, {}), steps.get(node)!);
  // When the catalog entry passed the bus: before it, the publisher stored the archive (its own work, not the mesh's).
  let catalog: number | undefined;
  const subs: Subscription[] = [
    nc.subscribe(`$KV.${MODULES}.${module}`, { callback: () => void (catalog ??= wallNow()) }),
    // The seat's put of `<node>.<module>` as the stream took it (the ack leaves with it).
    nc.subscribe(`$KV.${PLANS}.*.${module}`, { callback: (_e, m) => void (of(m.subject.split('.')[2]!).plan ??= wallNow()) }),
    // A direct get of the archive: the first is the meta (the client has its plan), the last its last chunk.
    ...[`$JS.API.DIRECT.GET.OBJ_${DEFAULT_ARCHIVES}`, `$JS.API.DIRECT.GET.OBJ_${DEFAULT_ARCHIVES}.>`].map((subject) =>
      nc.subscribe(subject, {
        callback: (_e, m) => {
          const node = INBOX_NODE.exec(m.reply ?? '')?.[1];
          if (!node) return;
          const s = of(node);
          s.firstGet ??= wallNow();
          s.lastGet = wallNow();
        },
      }),
    ),
    nc.subscribe(`$KV.${APPLIED}.*.${module}`, { callback: (_e, m) => void (of(m.subject.split('.')[2]!).report ??= wallNow()) }),
    // Every message of the phase by kind: what a build asks of the bus, message by message.
    nc.subscribe('>', {
      callback: (_e, m) => {
        const kind = kindOf(m.subject);
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      },
    }),
  ];
  const kinds = new Map<string, number>();
  return {
    done(engine, t0) {
      for (const s of subs) s.unsubscribe();
      for (const [node, at] of engine) of(node).engine = at;
      const n = engine.size || 1;
      const byKind = [...kinds].sort((a, b) => b[1] - a[1]).map(([k, c]) => `${k} ${(c / n).toFixed(1)}`);
      return [...breakdown([...steps.values()], t0, catalog), '', `messages a node during the phase, by subject: ${byKind.join('; ')}`];
    },
  };
}

/** Each step's p50 and max over the nodes, and the last node's own path, as markdown rows. */
function breakdown(all: Steps[], t0: number, catalog: number | undefined): string[] {
  const stages: [string, (s: Steps) => number | undefined][] = [
    ['the publisher stored the archive and put the catalog entry', () => gap(t0, catalog)],
    ["catalog entry → the seat wrote the node's plan", (s) => gap(catalog, s.plan)],
    ["plan written → its client asked for the archive (delivery, the client's plan stage)", (s) => gap(s.plan, s.firstGet)],
    ["the archive's direct gets, first → last asked", (s) => gap(s.firstGet, s.lastGet)],
    ['last get asked → the fill at the engine (answer, digest, unpack, fill, handoff)', (s) => gap(s.lastGet, s.engine)],
    ['at the engine → the report written', (s) => gap(s.engine, s.report)],
    ['build published → at the engine (the row)', (s) => gap(t0, s.engine)],
  ];
  const last = all
    .filter((s) => s.engine !== undefined)
    .sort((a, b) => a.engine! - b.engine!)
    .at(-1);
  const plans = all.map((s) => s.plan).filter((x): x is number => x !== undefined);
  const rows = stages.map(([what, get]) => {
    const xs = all
      .map(get)
      .filter((x): x is number => x !== undefined)
      .sort((a, b) => a - b);
    const lastNode = last ? get(last) : undefined;
    return `| ${what} | ${fmt(percentile(xs, 50))} | ${fmt(xs.at(-1))} | ${fmt(lastNode)} | ${xs.length} |`;
  });
  return [
    '| step of a new build | p50 | max | the last node | nodes seen |',
    '|---|---|---|---|---|',
    ...rows,
    `| the seat's plan writes: first → last on the bus | | ${fmt(plans.length ? Math.max(...plans) - Math.min(...plans) : undefined)} | | ${plans.length} |`,
  ];
}

/** A subject's kind: its first tokens, with node names and inbox tokens left out. */
const kindOf = (subject: string) =>
  subject
    .replace(/^(_INBOX[^.]*)\..*/, '$1.*')
    .replace(/n\d{5}/g, '<node>')
    .split('.')
    .slice(0, subject.startsWith('$JS.API.DIRECT') ? 5 : 4)
    .join('.');

const gap = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : b - a);
const fmt = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? '—' : `${x.toFixed(1)} ms`);
