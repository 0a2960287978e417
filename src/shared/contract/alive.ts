// The alive message (DESIGN §3, §14): what each client publishes on `prov.alive.<node>` when it
// starts and every period, so the seat knows which nodes are there, on which version, with their engine.
import * as v from 'valibot';
import { nameField as name } from './fields.ts';

/** The default period of the alive message, in seconds (`--alive`). */
export const DEFAULT_ALIVE_SECONDS = 30;

/** Extra silence past two periods before a node is called silent, in seconds (DESIGN §14). */
export const SILENT_GRACE_SECONDS = 15;

/** How long after its connection closed a node that has not come back is silent, in seconds (DESIGN §14). */
export const DISCONNECT_SILENT_SECONDS = 5;

/** The engine's state as the client last knew it: `up` or `down`, since when (ISO). */
export const EngineStateSchema = v.object({ state: v.picklist(['up', 'down']), since: v.string() });
/** The engine's state. */
export type EngineState = v.InferOutput<typeof EngineStateSchema>;

/** A value of `prov.alive.<node>`: `{node, version, every, engine: {state, since}, modules, at}`. */
export const AliveSchema = v.object({
  node: name,
  /** The client's version. */
  version: v.string(),
  /** The client's period, in seconds. */
  every: v.pipe(v.number(), v.minValue(0)),
  engine: EngineStateSchema,
  /** The count of the node's plans. */
  modules: v.pipe(v.number(), v.integer(), v.minValue(0)),
  /** When it was sent (ISO). */
  at: v.string(),
});
/** An alive message. */
export type Alive = v.InferOutput<typeof AliveSchema>;

/** How long a node may say nothing before it is silent, in milliseconds: two of its periods plus the grace. */
export function silentAfterMs(everySeconds: number): number {
  return (2 * everySeconds + SILENT_GRACE_SECONDS) * 1000;
}

/**
 * The connection name of a node's client (its daemon, `--once`, `--dry-run`): the server's connect and
 * disconnect events carry it, and the seat counts only the events of this name as its client's (§14).
 */
export function clientConnectionName(node: string): string {
  return `node-provisioner ${node}`;
}

/**
 * What the seat remembers of a node with a plan (the verb's `alive`, keyed `<node>`): its last word as
 * the client said it (absent until one is heard), when the seat heard it, and the node's health
 * reason while it is silent or its engine is down.
 */
export type AliveEntry = {
  node: string;
  version?: string;
  every?: number;
  engine?: EngineState;
  modules?: number;
  /** The client's `at`. */
  at?: string;
  /** When the seat heard the last word (ISO, the seat's clock). */
  heard?: string;
  /** `no word from its client for 75 s`, `engine down since …`: the node's health entry, when it has one. */
  reason?: string;
};
