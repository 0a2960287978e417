// Keeps a watch's ordered push consumer alive (DESIGN §11: watches recover under a node's grants) at
// the cost of one idle heartbeat a watch every 30 s: the consumer made again at once when the
// cluster says it may be gone (the connection moved, a server left the cluster), after two silent
// heartbeat periods when nothing says so, and when a heartbeat says the server delivered what the
// watch never got; each re-make asked until made (shared/bus/watch/remake.ts); and the stream read again
// from the start when it came back holding less than the watch saw (a server restarted on a wiped store).
import type { NatsConnection } from '@nats-io/transport-node';
import type { ConsumerInfo } from '@nats-io/jetstream';
import type { OrderedConsumer } from './internals.ts';
import { paceOf } from './pace.ts';
import { hastenRemakes, type RemakeLog, type Remakes } from './remake.ts';
import { noteHeard } from './heard.ts';

/**
 * The idle heartbeat of a watch's consumer, nats.js's own for an ordered consumer. It is what an
 * idle node costs the bus: one empty message (about 100 bytes) a watch every 30 s — four watches,
 * 0.13 messages a second (docs/scale.md). It only tells what nothing else does: a consumer lost
 * without a word (deleted by hand, a leaf link's far side gone past its 5-minute inactivity), noticed
 * after two silent periods, and a message lost in flight, told by the heartbeat's last delivered
 * sequence. Failover does not wait for it: a reconnect and a server leaving the cluster re-make at
 * once every consumer that may have gone. At 1 s (before issue 22) every idle node cost 4 messages a
 * second, 40,000 a second at 10,000 nodes.
 */
export const WATCH_HEARTBEAT_MS = 30_000;

/** How many heartbeat periods in a row without a message or heartbeat make a watch re-make its consumer. */
export const WATCH_MISSED_HEARTBEATS = 2;

/** What a watch tells its keeper. */
export type WatchKeeper = {
  /**
   * Makes the watch's first consumer (the reset watch.ts begins with), a re-make like any other;
   * resolves once one is made, rejects with the bus's refusal (the stream missing, not granted).
   */
  begin(): Promise<void>;
  /** A message or flow-control request arrived: the consumer is alive. */
  heard(): void;
  /** A heartbeat said the last consumer sequence the server delivered; true when the watch got exactly that far (no loss, no re-make). */
  beat(lastConsumerSequence: number): boolean;
  /**
   * The consumer was made again (`info`: the new one). Returns true when the stream holds less than
   * the watch saw and the watch reads it again from the start (the new consumer is already replaced);
   * the watch then says which keys are gone once the re-read has caught up (shared/bus/watch/state.ts). Every
   * other re-make resumes after the last stream sequence delivered, so it needs no such diff.
   */
  recreated(info: ConsumerInfo): boolean;
  /** The consumer's pending count is wrong (recount.ts): it is made again after the last message delivered, unless it is being made. */
  recount(): void;
  /** Stops the keeper's timers and its listening to the connection. */
  stop(): void;
};

/** Where a keeper says what it does: a re-make it warned of, and its end (at notice, when the log says notices). */
export type KeeperLog = RemakeLog & { warn(line: string): void; notice?(line: string): void };

/**
 * Keeps `consumer` alive: every consumer it is re-made as has a `heartbeatMs` idle heartbeat
 * (WATCH_HEARTBEAT_MS; tests ask for shorter); it is re-made at once on a reconnect and when a server
 * other than the one holding it is not known to be left the cluster, after WATCH_MISSED_HEARTBEATS
 * silent periods, and when a heartbeat says the server delivered what the watch never got. `what`
 * names the watch in log lines.
 */
export function keepWatch(nc: NatsConnection, consumer: OrderedConsumer, what: string, log?: KeeperLog, heartbeatMs = WATCH_HEARTBEAT_MS): WatchKeeper {
  consumer.setIdleHeartbeat(heartbeatMs);
  // The keeper is the one judge of silence. nats.js's own monitor, once two periods went silent,
  // resets the consumer every period until something arrives, and a reset is not something: after a
  // WAN cut of two periods it re-made an idle watch's consumer each period just before the new one's
  // first heartbeat was due, for ever (test/watch-wan.test.ts). It also reset under a new name
  // while a create was still asked (remake.ts says why that fills max_consumers).
  consumer.dropHeartbeatMonitor();
  return new ConsumerKeeper(nc, consumer, what, heartbeatMs, log);
}

class ConsumerKeeper implements WatchKeeper {
  #heard = true;
  #silent = 0;
  #paused = false;
  // A re-make this keeper asked for and not yet seen done: it is asked until it is made
  // (shared/bus/watch/remake.ts), so asking again every period would only pile up creates.
  #remaking = false;
  /** A re-make said at warning and not yet made: its end is said too, so a warning is never left standing. */
  #warned = false;
  #stopped = false;
  /** The server the consumer lives on (its leader, as its create said). */
  #consumerServer: string | undefined;
  /** The server `nc` is connected to, and the cluster's client URLs as its last INFO said them. */
  #connectedTo: string | undefined;
  #servers: Set<string>;
  /** What begin() waits for: the first consumer made, or a refusal. */
  #began: { resolve(): void; reject(err: Error): void } | undefined;
  private readonly remakes: Remakes;
  readonly #timer: NodeJS.Timeout;
  readonly #status: AsyncIterable<{ type: string }> & { stop(): void };

  constructor(
    private readonly nc: NatsConnection,
    private readonly consumer: OrderedConsumer,
    private readonly what: string,
    heartbeatMs: number,
    private readonly log?: KeeperLog,
  ) {
    const refused = (err: Error) => {
      this.#began?.reject(err);
      this.#began = undefined;
    };
    this.remakes = hastenRemakes(consumer, what, log, undefined, refused, paceOf(nc));
    this.#connectedTo = nc.info?.server_name;
    this.#servers = clientUrls(nc);
    this.#timer = setInterval(() => this.#tick(heartbeatMs), heartbeatMs);
    this.#timer.unref();
    this.#status = nc.status() as AsyncIterable<{ type: string }> & { stop(): void };
    void this.#follow();
  }

  begin(): Promise<void> {
    const began = new Promise<void>((resolve, reject) => (this.#began = { resolve, reject }));
    this.#remake();
    return began;
  }

  heard(): void {
    this.#heard = true;
    noteHeard(this.nc);
  }

  beat(lastConsumerSequence: number): boolean {
    this.heard();
    if (this.#inRemake()) return false;
    if (lastConsumerSequence <= this.consumer.deliveredSeq()) return lastConsumerSequence === this.consumer.deliveredSeq();
    // The server delivered a message the watch never got (sent while its interest moved to another
    // server): nothing else would say so until the next change.
    this.#remake(`the server delivered up to ${lastConsumerSequence}, the watch got ${this.consumer.deliveredSeq()}`);
    return false;
  }

  recreated(info: ConsumerInfo): boolean {
    this.heard();
    this.#remaking = false;
    if (this.#warned) this.log?.notice?.(`${this.what}: its consumer is made again; the watch goes on from where it was`);
    this.#warned = false;
    this.#began?.resolve();
    this.#began = undefined;
    this.#consumerServer = info.cluster?.leader;
    // The server starts a consumer asked to begin past the stream's end at the end; a KV stream's
    // last sequence never goes back, so this stream is not the one the watch read.
    if (info.delivered.stream_seq >= (info.config.opt_start_seq ?? 1) - 1) return false;
    this.log?.warn(`${this.what}: the stream holds less than the watch saw (made again on a wiped store?); reading it again from the start`);
    this.consumer.rewind();
    this.#remake();
    return true;
  }

  recount(): void {
    if (this.#inRemake()) return;
    this.log?.debug?.(`${this.what}: its read went quiet with messages still counted pending; making its consumer again to count them`);
    this.#remake();
  }

  stop(): void {
    this.#stopped = true;
    this.remakes.stop();
    clearInterval(this.#timer);
    this.#status.stop();
  }

  #remake(why?: string): void {
    if (this.#stopped) return;
    if (why) this.log?.warn(`${this.what}: ${why}; making its consumer again`);
    if (why) this.#warned = true;
    this.#remaking = true;
    this.consumer.reset();
  }

  /**
   * Whether the consumer is being made: asked for here and not yet seen made, or a reset of nats.js's
   * own (a gap in the delivery sequence) whose create is unanswered. Silence meanwhile is no news.
   */
  #inRemake(): boolean {
    return this.#remaking || this.remakes.busy();
  }

  #tick(heartbeatMs: number): void {
    if (this.#heard || this.#paused) {
      this.#heard = false;
      this.#silent = 0;
      return;
    }
    if (++this.#silent < WATCH_MISSED_HEARTBEATS || this.#inRemake()) return;
    this.#remake(`no heartbeat for ${(this.#silent * heartbeatMs) / 1000} s`);
  }

  async #follow(): Promise<void> {
    for await (const s of this.#status) {
      if (s.type === 'disconnect') this.#disconnected();
      if (s.type === 'update') this.#serversChanged();
      if (s.type === 'reconnect') this.#reconnected();
    }
  }

  /** Off the bus: silence is no news, and no create is given up (the reconnect makes the consumer again). */
  #disconnected(): void {
    this.#paused = true;
    this.remakes.disconnected(true);
  }

  /**
   * Back on the bus, perhaps on another server: the consumer is made again at once. One on the server
   * the connection lost went with it (or, a single server restarted, may have: on another store, or a
   * wiped one); one elsewhere may have sent a message while the connection's interest moved, lost in
   * flight, which only the next message or a heartbeat (30 s) would tell.
   */
  #reconnected(): void {
    const lost = this.#connectedTo;
    this.#connectedTo = this.nc.info?.server_name;
    this.#servers = clientUrls(this.nc);
    this.#paused = false;
    this.remakes.disconnected(false);
    this.#heard = true;
    if (this.#connectedTo !== lost) this.remakes.clusterChanged();
    if (this.#consumerServer !== undefined && this.#consumerServer !== lost) {
      this.log?.debug?.(`${this.what}: the connection moved from ${lost} to ${this.#connectedTo}; making its consumer on ${this.#consumerServer} again`);
    }
    this.#remake();
  }

  // A server that leaves the cluster (killed, cut off) takes the consumers it held without a word to
  // the watches on the others; its peers tell every connection at once (an INFO without its URL).
  // Which server a URL is, is not said, so every watch whose consumer is not on this connection's own
  // server is made again at once: on three servers, two watches in three, where waiting for a 30 s
  // heartbeat would leave a change lost for a minute.
  #serversChanged(): void {
    const now = clientUrls(this.nc);
    const left = [...this.#servers].filter((url) => !now.has(url));
    this.#servers = now;
    if (left.length === 0) return;
    this.remakes.clusterChanged();
    if (this.#paused || this.#consumerServer === this.nc.info?.server_name) return;
    this.log?.debug?.(
      `${this.what}: ${left.join(', ')} left the cluster; making its consumer${this.#consumerServer ? ` on ${this.#consumerServer}` : ''} again`,
    );
    this.#remake();
  }
}

/** The client URLs of the cluster's servers as the connection's last INFO said them. */
function clientUrls(nc: NatsConnection): Set<string> {
  return new Set(nc.info?.connect_urls ?? []);
}
