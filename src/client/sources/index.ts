// The client's value sources and the table of which source answers each kind of the registry.
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from '../../shared/cli/log.ts';
import { KNOWN_KINDS } from '../../shared/contract/registry.ts';
import type { Plan } from '../../shared/contract/plan.ts';
import { boundSource } from './bound.ts';
import { collectedSource, type NodeItems } from './collected.ts';
import { configSource } from './config.ts';
import { consumersSource } from './consumers.ts';
import { credentialMark } from './credentials.ts';
import { placementSource } from './placement.ts';
import { WHOLE_READ_KEYS } from './keyed.ts';
import type { FillLookup, Found, OnChange, Source, Wanted } from './source.ts';

export type { FillLookup, Found, Lookup, OnChange, Source, ValueLookup, Wanted } from './source.ts';

/** The name under which secrets are listed: the engine fills them from the request's secret parts, never a source. */
export const ENGINE = 'engine';

/** Which source answers each kind of the registry (DESIGN §5): every kind has exactly one. */
export const SOURCE_OF_KIND: Readonly<Record<string, string>> = {
  config: 'config',
  secret: ENGINE,
  dir: 'placement',
  access: 'placement',
  port: 'placement',
  seat: 'placement',
  machine: 'placement',
  collected: 'collected',
  shell: 'collected',
  environment: 'collected',
  contribution: 'collected',
  consumers: 'consumers',
  bound: 'bound',
};

/** The sources of one node, looked up through the kind table. */
export class Sources implements FillLookup {
  readonly #byName: Map<string, Source>;

  constructor(sources: readonly Source[]) {
    this.#byName = new Map(sources.map((s) => [s.name, s]));
  }

  /** The source answering `kind`, or undefined for an unknown kind or a secret. */
  sourceOf(kind: string): Source | undefined {
    const name = Object.hasOwn(SOURCE_OF_KIND, kind) ? SOURCE_OF_KIND[kind] : undefined;
    return name === undefined || name === ENGINE ? undefined : this.#byName.get(name);
  }

  /** The value of a placeholder of the plan's module, with its dependency key (see Found). */
  lookup(plan: Plan, wanted: Wanted): Found {
    const source = this.sourceOf(wanted.kind);
    if (source) return source.lookup(plan, wanted);
    const dependency = `${wanted.kind}:${plan.module}:${wanted.name}`;
    if (wanted.kind === 'secret') return { state: 'failed', reason: 'a secret is filled by the engine, never by the client', dependency };
    const name = Object.hasOwn(SOURCE_OF_KIND, wanted.kind) ? SOURCE_OF_KIND[wanted.kind] : undefined;
    // A kind the table names but whose source is not running fails clearly rather than waiting for ever.
    if (name !== undefined) return { state: 'failed', reason: `this client has no ${name} source to fill ${wanted.kind} values`, dependency };
    return { state: 'failed', reason: `unknown kind "${wanted.kind}"`, dependency };
  }

  /** What the plan's secret `name` reads on the client's side (credentials.ts). */
  credentialMark(plan: Plan, name: string): Found | undefined {
    return credentialMark(plan, name, this);
  }

  /** Hands every source the node's current plans. */
  plansChanged(plans: ReadonlyMap<string, Plan>): void {
    for (const source of this.#byName.values()) source.plansChanged?.(plans);
  }

  /** Resolves once every source's watches delivered what was stored when they began. */
  caughtUp(): Promise<void> {
    return Promise.all([...this.#byName.values()].map((s) => s.caughtUp)).then(() => undefined);
  }

  /** Resolves once every source has read what there is to read now (Source.settled), its bucket there or not. */
  settled(): Promise<void> {
    return Promise.all([...this.#byName.values()].map((s) => s.settled?.() ?? s.caughtUp)).then(() => undefined);
  }

  /** Resolves once each source that reads by key has read every key of the node whole (Source.readWhole). */
  readWhole(): Promise<void> {
    return Promise.all([...this.#byName.values()].map((s) => s.readWhole?.())).then(() => undefined);
  }

  /** Stops every source's watches. */
  stop(): void {
    for (const source of this.#byName.values()) source.stop?.();
  }
}

/**
 * Past this many modules a node reads its config whole before its first fills, not a key at a time
 * as the fills name them (client/node.ts, keyed.ts): a module names a few keys, so past WHOLE_READ_KEYS / 4
 * modules the one read is cheaper for the bus than the gets, and a module's first fill then finds
 * its values read (each key named unread held its module's fill until its get was answered, then
 * filled it again).
 */
export const WHOLE_READ_MODULES = WHOLE_READ_KEYS / 4;

/**
 * Starts the sources of `node`; each says its changed dependencies to `onChange`. `items` is kept by
 * the collected source's watch (made by the caller, so the items writer can read it too).
 */
export function startSources(nc: NatsConnection, node: string, items: NodeItems, log: Logger, onChange: OnChange): Sources {
  return new Sources([
    placementSource(),
    configSource(nc, node, log, onChange),
    collectedSource(nc, items, log, onChange),
    consumersSource(nc, node, log, onChange),
    boundSource(nc, node, log, onChange),
  ]);
}

/** Every kind of the registry that the table does not map (a test keeps this empty). */
export function kindsWithoutSource(): string[] {
  return KNOWN_KINDS.filter((kind) => !Object.hasOwn(SOURCE_OF_KIND, kind));
}
