// What one connection has learned of its bus, shared by every watch on it (shared/bus/watch/remake.ts):
// how fast consumer creates are answered, and whether the cluster is failing over. A create is given
// up sooner while the cluster fails over (a new consumer may be placed on a dead server) and never
// sooner than this bus answers: a bus busy with a fleet's starts answers seconds late, and giving up
// its creates sooner than that made each late answer a consumer nobody holds, and none made sooner.
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { isTimeout } from '../../base/errors.ts';

/** How many of the latest answers the pace keeps. */
export const PACE_ANSWERS = 8;
/**
 * How long an answer counts: a burst past says nothing of the bus now. Kept a minute, a fleet's start
 * (creates 0.8 s late) had its failover's creates wait 1.7 s each; kept 5 s, a failover's burst had
 * the creates after it wait 1 s each, one in three placed on the dead server.
 */
export const PACE_MEMORY_MS = 2000;
/** How long after the cluster was last seen changing creates are given up as while it fails over. */
export const REMAKE_UNSETTLED_MS = 20_000;
/**
 * How long a stream's leader may not have heard from a replica before that replica's server counts
 * as gone: replicas are heard from every second (nats-server's raft heartbeat).
 */
export const REPLICA_SILENT_MS = 2500;

/** A stream's cluster as its info says it (the fields read here); none at all from a server in no cluster. */
export type StreamCluster = { replicas?: { current: boolean; offline?: boolean; active: number }[] };

/**
 * What a look at a stream's replicas found (BusPace.look): a server `gone` (or the look refused);
 * every replica `whole` (or the look unanswered: a slow bus); or the create's server `alone` and
 * answering — a stream of one server, its own look answered by it, or a server in no cluster.
 */
export type StreamLook = 'gone' | 'whole' | 'alone';

/** One read of a stream's cluster for a look: what it found, or why it found nothing. */
type LookRead = { cluster: StreamCluster | undefined } | 'unanswered' | 'refused';

/**
 * Reads a stream's cluster, waiting at most `ms`: rejects when the read is unanswered or refused
 * (nats.js parses the answer and keeps only what StreamCluster names).
 */
export type ReadCluster = (stream: string, ms: number) => Promise<StreamCluster | undefined>;

/**
 * How long a look at a stream's replicas waits for its answer (look). A stream whose leader
 * is gone leaves it unanswered; a bus busy with a fleet's starts answers a stream info in well under
 * this while its creates come seconds late.
 */
export const LOOK_ANSWER_MS = 1000;
/** How long one look at a stream's replicas answers for every watch of that stream on the connection. */
export const LOOK_REUSE_MS = 1000;

/** The answers a connection's creates had, the wait that follows from them, and whether its cluster is unsettled. */
export class BusPace {
  #answers: { ms: number; at: number }[] = [];
  #lastAnswerAt = -Infinity;
  #unsettledUntil = -Infinity;
  /** The watches whose create waits for its answer now. */
  readonly #waiting = new Set<object>();
  /** The latest look at each stream's replicas: asked when, and what it found. */
  readonly #looks = new Map<string, { at: number; read: Promise<LookRead> }>();
  /** The streams whose info this connection read, the latest last; and those it may not read. */
  readonly #readable = new Set<string>();
  readonly #unreadable = new Set<string>();
  /**
   * Whether the stream info this connection read last names no cluster: its JetStream is one server
   * in no cluster, every consumer made on the server that answered (a look would ask nothing new, and
   * under a thousand starts on one server its answer came past LOOK_ANSWER_MS).
   */
  #inNoCluster = false;

  constructor(
    private readonly now: () => number = Date.now,
    /** How this connection reads a stream's cluster; without one, no create waits on a look (look). */
    private readonly readCluster?: ReadCluster,
  ) {}

  /** Whether this pace can look at a stream's replicas before a create is given up. */
  get canLook(): boolean {
    return this.readCluster !== undefined;
  }

  /**
   * Whether `stream` has every replica current and heard from (sawStream), by a look at its info:
   * `gone` when the look shows a server gone or is refused; a look left unanswered LOOK_ANSWER_MS
   * says the bus is slow, and the create waits on (`whole`). A look answered by a stream of one
   * server is `alone`: the server its consumer is made on answered, so its create comes late, never
   * not at all; and so is every stream, unlooked at, once a stream info read named no cluster.
   * A stream this login may not read (a node's share of a shared bucket, DESIGN §11) is judged by
   * the stream this connection read last instead — `init --replicas 3` places every bucket on the
   * same three servers — and none read, it is `gone`. A look asked within LOOK_REUSE_MS is the
   * answer of every watch of that stream on the connection.
   */
  look(stream: string): Promise<StreamLook> {
    // A JetStream in no cluster has one server, and it answers this connection: nothing to look at.
    if (this.#inNoCluster) return Promise.resolve('alone');
    const looked = this.#unreadable.has(stream) ? [...this.#readable].at(-1) : stream;
    if (looked === undefined || !this.readCluster) return Promise.resolve('gone');
    let recent = this.#looks.get(looked);
    if (!recent || this.now() - recent.at >= LOOK_REUSE_MS) {
      recent = { at: this.now(), read: this.#read(looked) };
      this.#looks.set(looked, recent);
    }
    return recent.read.then((read) => {
      if (read === 'unanswered') return 'whole';
      if (read === 'refused' || this.unsettled()) return 'gone';
      // One server holds the stream and its consumers, and it answered; a stand-in stream's one
      // server says so of the create's own stream only on a bus in no cluster (its info names none).
      const alone = read.cluster === undefined || (looked === stream && (read.cluster.replicas ?? []).length === 0);
      return alone ? 'alone' : 'whole';
    });
  }

  /** One read of `stream`'s cluster for look: what it found, or why it found nothing. */
  #read(stream: string): Promise<LookRead> {
    return this.readCluster!(stream, LOOK_ANSWER_MS).then(
      (cluster): LookRead => {
        this.sawStream(cluster, stream);
        return { cluster };
      },
      // Unanswered, the bus is slow, not short of a server: a server gone takes its streams'
      // leadership with it, and its peers tell the connection at once (the cluster changed, and
      // the create is given up then). A thousand clients started at once on two cores left looks
      // unanswered for seconds, and each one given up for it was asked again every 0.25 s.
      (err: unknown): LookRead => {
        if (isTimeout(err)) return 'unanswered';
        // Refused: not this login's to read (no look asks it again; the last stream read stands for it).
        this.refusedRead(stream);
        return 'refused';
      },
    );
  }

  /** This login may not read `stream`'s info (its bucket check was refused): no look asks it. */
  refusedRead(stream: string): void {
    this.#unreadable.add(stream);
    this.#readable.delete(stream);
  }

  /** A create was answered `ms` after it was asked (in time, or after it was given up). */
  answered(ms: number): void {
    this.#lastAnswerAt = this.now();
    this.#answers.push({ ms, at: this.now() });
    if (this.#answers.length > PACE_ANSWERS) this.#answers.shift();
  }

  /**
   * How long a create waits before it is given up: `floor`, or twice the median of the answers of
   * the last PACE_MEMORY_MS when that is longer, at most `ceiling`.
   */
  giveUpAfter(floor: number, ceiling: number): number {
    const median = this.answerMs();
    return median === undefined ? floor : Math.min(ceiling, Math.max(floor, 2 * median));
  }

  /** The median of the answers of the last PACE_MEMORY_MS (how late a live create comes now), or undefined when none. */
  answerMs(): number | undefined {
    const since = this.now() - PACE_MEMORY_MS;
    const recent = this.#answers
      .filter((a) => a.at >= since)
      .map((a) => a.ms)
      .sort((a, b) => a - b);
    return recent.length === 0 ? undefined : recent[Math.floor((recent.length - 1) / 2)]!;
  }

  /** Whether a create was answered at or after `at`. */
  answeredSince(at: number): boolean {
    return this.#lastAnswerAt >= at;
  }

  /** `watch`'s create waits for its answer (`on`), or no longer. */
  waiting(watch: object, on: boolean): void {
    if (on) this.#waiting.add(watch);
    else this.#waiting.delete(watch);
  }

  /** Whether a watch other than `watch` waits for its create's answer too. */
  othersWaiting(watch: object): boolean {
    return this.#waiting.size > (this.#waiting.has(watch) ? 1 : 0);
  }

  /**
   * The cluster changed (a server left it, the connection moved): the answers from before it say
   * nothing of the bus now (a pace learned at a fleet's start, creates a second late, had a running
   * fleet's creates wait 1.7 s each after a kill, one in three on a dead server).
   */
  unsettle(): void {
    this.#answers = [];
    this.#looks.clear();
    this.#inNoCluster = false;
    this.#unsettledUntil = this.now() + REMAKE_UNSETTLED_MS;
  }

  /** Whether the cluster changed within REMAKE_UNSETTLED_MS. */
  unsettled(): boolean {
    return this.now() < this.#unsettledUntil;
  }

  /**
   * A stream's info was read (`stream`, readable again for look if it was not): a replica offline, behind or
   * silent past REPLICA_SILENT_MS is a server gone, and the cluster unsettled (what the answers taught
   * since is kept: this is no new change); no cluster named, its JetStream is one server in none.
   */
  sawStream(cluster: StreamCluster | undefined, stream?: string): void {
    if (stream !== undefined) {
      this.#unreadable.delete(stream);
      this.#readable.delete(stream);
      this.#readable.add(stream);
      this.#inNoCluster = cluster === undefined;
    }
    const gone = (cluster?.replicas ?? []).some((r) => r.offline === true || !r.current || r.active / 1e6 > REPLICA_SILENT_MS);
    if (gone) this.#unsettledUntil = Math.max(this.#unsettledUntil, this.now() + REMAKE_UNSETTLED_MS);
  }
}

const paces = new WeakMap<NatsConnection, BusPace>();

/** The pace of `nc`, shared by every watch and bucket read on it (a bus slow or failing over for one is so for all). */
export function paceOf(nc: NatsConnection): BusPace {
  let pace = paces.get(nc);
  if (!pace) paces.set(nc, (pace = new BusPace(Date.now, (stream, ms) => readCluster(nc, stream, ms))));
  return pace;
}

/** A stream's cluster as its info on `nc` says it, read once (no leader: unanswered, or 503). */
async function readCluster(nc: NatsConnection, stream: string, ms: number): Promise<StreamCluster | undefined> {
  const jsm = await jetstreamManager(nc, { checkAPI: false, timeout: ms });
  return (await jsm.streams.info(stream)).cluster;
}
