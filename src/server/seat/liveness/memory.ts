// The seat's memory of each node's last word (DESIGN §14): the alive messages, the client's connection
// opening and closing, and which nodes have a plan. Pure, on an injected clock: it says which nodes
// are silent or have their engine down, and what changed since it was last asked.
import { compareKeys } from '../../../shared/contract/keys.ts';
import { DEFAULT_ALIVE_SECONDS, DISCONNECT_SILENT_SECONDS, silentAfterMs, type Alive, type AliveEntry } from '../../../shared/contract/alive.ts';

/** One node as the memory keeps it. */
type Node = {
  /** The node's plan keys (`<node>.<module>`): it counts while it has one. */
  plans: Set<string>;
  /** When its first plan was seen, for a node never heard since the seat started. */
  plannedMs?: number;
  alive?: Alive;
  heardMs?: number;
  /** When its client's last open connection closed, until it connects or speaks again. */
  closedMs?: number;
  /** The client's connections seen opening and not yet closing (`<server>/<id>`). */
  open: Set<string>;
};

/** A node's health beginning or ending (said once each on `provisioner_health`). */
export type Change = { node: string; began?: string; ended?: string };

/** The last word of every node, and the health of those with a plan. */
export class LivenessMemory {
  readonly #nodes = new Map<string, Node>();
  /** The reason said of each node now silent or with its engine down. */
  readonly #said = new Map<string, string>();
  #sortedSaid: readonly string[] | undefined;
  #sortedPlanned: readonly string[] | undefined;

  /** `now` is the clock (ms); `startMs` the seat's start, from which a node never heard is judged. */
  constructor(
    private readonly now: () => number,
    private readonly startMs: number = now(),
  ) {}

  /** A plan key put (`present`) or deleted: a node counts while it has a plan. */
  plan(node: string, key: string, present: boolean): void {
    const n = this.#node(node);
    const had = n.plans.size > 0;
    if (present) n.plans.add(key);
    else n.plans.delete(key);
    if (!had && n.plans.size > 0) n.plannedMs ??= this.now();
    if (had !== n.plans.size > 0) this.#sortedPlanned = undefined;
  }

  /** An alive message of `node`, already checked against its subject. */
  heard(alive: Alive): void {
    const n = this.#node(alive.node);
    n.alive = alive;
    n.heardMs = this.now();
    delete n.closedMs;
  }

  /** The node's client opened a connection (`id`: the server's and the connection's ids). */
  connected(node: string, id: string): void {
    const n = this.#node(node);
    n.open.add(id);
    delete n.closedMs;
  }

  /** The node's client closed a connection; with none left open that the seat saw open, its clock of 5 s starts. */
  disconnected(node: string, id: string): void {
    const n = this.#node(node);
    n.open.delete(id);
    if (n.open.size === 0) n.closedMs = this.now();
  }

  /** The node's health reason now: silent (closed, or no word for two periods + 15 s), its engine down, or none. */
  reasonOf(node: string): string | undefined {
    const n = this.#nodes.get(node);
    if (!n || n.plans.size === 0) return undefined;
    const now = this.now();
    if (n.closedMs !== undefined && now - n.closedMs >= DISCONNECT_SILENT_SECONDS * 1000)
      return `no word from its client since its connection closed at ${new Date(n.closedMs).toISOString()}`;
    // Heard since the seat started: its own period from its last word. Never heard: the default
    // period from the seat's start (or its first plan), as the seat cannot know a word it missed.
    const limit = silentAfterMs(n.alive?.every ?? DEFAULT_ALIVE_SECONDS);
    const from = n.heardMs ?? Math.max(this.startMs, n.plannedMs ?? this.startMs);
    if (now - from >= limit) return `no word from its client for ${limit / 1000} s`;
    if (n.alive?.engine.state === 'down') return `engine down since ${n.alive.engine.since}`;
    return undefined;
  }

  /**
   * What began and ended since the last call: for `node` alone when given (a word or an event of its
   * own changes no other node's health), else for every node the memory knows (the clock's tick).
   */
  changes(node?: string): Change[] {
    const changes: Change[] = [];
    if (node !== undefined) this.#judge(node, changes);
    else {
      for (const n of this.#nodes.keys()) this.#judge(n, changes);
      // A node said once and since forgotten has its end said too.
      for (const n of this.#said.keys()) if (!this.#nodes.has(n)) this.#judge(n, changes);
    }
    return changes;
  }

  #judge(node: string, into: Change[]): void {
    const was = this.#said.get(node);
    const is = this.reasonOf(node);
    if (was === is) return;
    into.push({ node, ...(is === undefined ? {} : { began: is }), ...(was === undefined ? {} : { ended: was }) });
    if (is === undefined) this.#said.delete(node);
    else this.#said.set(node, is);
    if ((was === undefined) !== (is === undefined)) this.#sortedSaid = undefined;
  }

  /** The nodes whose health was last said, in key order (the verb's `health` entries keyed `<node>`). */
  healthKeys(): readonly string[] {
    return (this.#sortedSaid ??= [...this.#said.keys()].sort(compareKeys));
  }

  /** A node's health entry as last said: `{node, reason}`. */
  healthEntry(node: string): { node: string; reason: string } | undefined {
    const reason = this.#said.get(node);
    return reason === undefined ? undefined : { node, reason };
  }

  /** The nodes with a plan, in key order (the verb's `alive`). */
  plannedKeys(): readonly string[] {
    return (this.#sortedPlanned ??= [...this.#nodes]
      .filter(([, n]) => n.plans.size > 0)
      .map(([node]) => node)
      .sort(compareKeys));
  }

  /** A node with a plan as the verb's `alive` answers it: its last word, when the seat heard it, its health reason as last said. */
  aliveEntry(node: string): AliveEntry | undefined {
    const n = this.#nodes.get(node);
    if (!n || n.plans.size === 0) return undefined;
    const reason = this.#said.get(node);
    const word = n.alive ? { version: n.alive.version, every: n.alive.every, engine: n.alive.engine, modules: n.alive.modules, at: n.alive.at } : {};
    return {
      node,
      ...word,
      ...(n.heardMs === undefined ? {} : { heard: new Date(n.heardMs).toISOString() }),
      ...(reason === undefined ? {} : { reason }),
    };
  }

  /** Counts of the nodes with a plan: speaking, silent, their engine down (for metrics). */
  counts(): { alive: number; silent: number; engineDown: number } {
    const planned = this.plannedKeys().length;
    let silent = 0;
    let engineDown = 0;
    for (const reason of this.#said.values())
      if (reason.startsWith('engine down')) engineDown++;
      else silent++;
    return { alive: planned - silent - engineDown, silent, engineDown };
  }

  #node(name: string): Node {
    let n = this.#nodes.get(name);
    if (!n) this.#nodes.set(name, (n = { plans: new Set(), open: new Set() }));
    return n;
  }
}
