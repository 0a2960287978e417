// Keeps a watch's ordered push consumer alive (DESIGN §11: watches recover under a node's grants):
// a short idle heartbeat; the consumer made again at once when the server it lived on is gone, and
// within a heartbeat and a half when it may be (the connection moved to another server, or a server
// left the cluster) and is not heard from; each re-make tried again soon while the bus fails over
// (shared/watch/remake.ts); and the stream read again from the start when it came back holding less than
// the watch saw (a server restarted on a wiped store).
import type { NatsConnection } from '@nats-io/transport-node';
import type { ConsumerInfo } from '@nats-io/jetstream';
import type { OrderedConsumer } from './internals.ts';
import { hastenRemakes, type RemakeLog, type Remakes } from './remake.ts';

/**
 * The idle heartbeat of a watch's consumer. nats.js makes every ordered push consumer with 30 s and
 * notices a lost one after two missed (a minute). At 1 s a consumer that may have gone (a server of
 * the cluster left) is known alive or made again within 1.5 s, and one lost without a word in 2–3 s.
 * The cost: the server sends each idle watch one empty message (about 100 bytes) a second — a node
 * with five watches 0.5 KB/s, a thousand nodes 5,000 messages a second across the cluster. At 2 s
 * (half that) a change whose consumer lived on a lost server reached the engine 2.5 s after the bus
 * took it, past the 2 s the mesh promises (issue 13).
 */
export const WATCH_HEARTBEAT_MS = 1000;

/** How many heartbeat periods in a row without a message or heartbeat make a watch re-make its consumer. */
export const WATCH_MISSED_HEARTBEATS = 2;

/** How long a consumer that may have gone has to be heard from before it is made again. */
export const WATCH_SUSPECT_MS = WATCH_HEARTBEAT_MS + 500;

/** What a watch tells its keeper. */
export type WatchKeeper = {
  /** Makes the watch's first real consumer (the reset watch.ts begins with): a re-make like any other. */
  begin(): void;
  /** A message or flow-control request arrived: the consumer is alive. */
  heard(): void;
  /** A heartbeat arrived, saying the last consumer sequence the server delivered. */
  beat(lastConsumerSequence: number): void;
  /**
   * The consumer was made again (`info`: the new one). Returns true when the stream holds less than
   * the watch saw and the watch reads it again from the start (the new consumer is already replaced);
   * the watch then says which keys are gone once the re-read has caught up (shared/watch/state.ts). Every
   * other re-make resumes after the last stream sequence delivered, so it needs no such diff.
   */
  recreated(info: ConsumerInfo): boolean;
  /** Stops the keeper's timers and its listening to the connection. */
  stop(): void;
};

/** Where a keeper says what it does. */
export type KeeperLog = RemakeLog & { warn(line: string): void };

/**
 * Keeps `consumer` alive: every consumer it is re-made as has a
 * WATCH_HEARTBEAT_MS heartbeat; it is re-made after WATCH_MISSED_HEARTBEATS silent periods, when a
 * heartbeat says the server delivered what the watch never got, at once on a reconnect when it lived
 * on the server `nc` lost, and after WATCH_SUSPECT_MS without a word when it may have gone.
 * `what` names the watch in log lines.
 */
export function keepWatch(nc: NatsConnection, consumer: OrderedConsumer, what: string, log?: KeeperLog): WatchKeeper {
  // nats.js writes 30 s into the config of every consumer a reset makes; the first one, made with
  // it, is replaced at once.
  consumer.setIdleHeartbeat(WATCH_HEARTBEAT_MS);
  const remakes = hastenRemakes(consumer, what, log);
  return new ConsumerKeeper(nc, consumer, remakes, what, log);
}

class ConsumerKeeper implements WatchKeeper {
  #heard = true;
  /** How many times the consumer was heard from, so a suspicion can tell whether it was since. */
  #heardCount = 0;
  #silent = 0;
  #paused = false;
  // A re-make this keeper asked for and not yet seen done: it is tried until it is made
  // (shared/watch/remake.ts), so asking again every period would only pile up creates.
  #remaking = false;
  #stopped = false;
  /** The server the consumer lives on (its leader, as its create said). */
  #consumerServer: string | undefined;
  /** The server `nc` is connected to, and the cluster's client URLs as its last INFO said them. */
  #connectedTo: string | undefined;
  #servers: Set<string>;
  #suspect: NodeJS.Timeout | undefined;
  readonly #timer: NodeJS.Timeout;
  readonly #status: AsyncIterable<{ type: string }> & { stop(): void };

  constructor(
    private readonly nc: NatsConnection,
    private readonly consumer: OrderedConsumer,
    private readonly remakes: Remakes,
    private readonly what: string,
    private readonly log?: KeeperLog,
  ) {
    this.#connectedTo = nc.info?.server_name;
    this.#servers = clientUrls(nc);
    this.#timer = setInterval(() => this.#tick(), WATCH_HEARTBEAT_MS);
    this.#timer.unref();
    this.#status = nc.status() as AsyncIterable<{ type: string }> & { stop(): void };
    void this.#follow();
  }

  begin(): void {
    this.#remake();
  }

  heard(): void {
    this.#heard = true;
    this.#heardCount++;
  }

  beat(lastConsumerSequence: number): void {
    this.heard();
    // The server delivered a message the watch never got (sent while its interest moved to another
    // server): nothing else would say so until the next change.
    if (this.#inRemake() || lastConsumerSequence <= this.consumer.deliveredSeq()) return;
    this.#remake(`the server delivered up to ${lastConsumerSequence}, the watch got ${this.consumer.deliveredSeq()}`);
  }

  recreated(info: ConsumerInfo): boolean {
    this.heard();
    this.#remaking = false;
    this.#consumerServer = info.cluster?.leader;
    // The server starts a consumer asked to begin past the stream's end at the end; a KV stream's
    // last sequence never goes back, so this stream is not the one the watch read.
    if (info.delivered.stream_seq >= (info.config.opt_start_seq ?? 1) - 1) return false;
    this.log?.warn(`${this.what}: the stream holds less than the watch saw (made again on a wiped store?); reading it again from the start`);
    this.consumer.rewind();
    this.#remake();
    return true;
  }

  stop(): void {
    this.#stopped = true;
    this.remakes.stop();
    clearInterval(this.#timer);
    clearTimeout(this.#suspect);
    this.#status.stop();
  }

  #remake(why?: string): void {
    if (this.#stopped) return;
    if (why) this.log?.warn(`${this.what}: ${why}; making its consumer again`);
    clearTimeout(this.#suspect);
    this.#suspect = undefined;
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

  #tick(): void {
    if (this.#heard || this.#paused) {
      this.#heard = false;
      this.#silent = 0;
      return;
    }
    if (++this.#silent < WATCH_MISSED_HEARTBEATS || this.#inRemake()) return;
    this.#remake(`no heartbeat for ${(this.#silent * WATCH_HEARTBEAT_MS) / 1000} s`);
  }

  async #follow(): Promise<void> {
    for await (const s of this.#status) {
      if (s.type === 'disconnect') this.#paused = true;
      if (s.type === 'update') this.#serversChanged();
      if (s.type === 'reconnect') this.#reconnected();
    }
  }

  /**
   * Back on the bus, perhaps on another server. A consumer on the server the connection lost went
   * with it (or, a single server restarted, may have: on another store, or a wiped one) and is made
   * again at once; one on another server is most likely alive and keeps delivering, and is made again
   * only if not heard from: re-made anyway, it could not be before the cluster has a meta leader,
   * which the lost server may have been.
   */
  #reconnected(): void {
    const lost = this.#connectedTo;
    this.#connectedTo = this.nc.info?.server_name;
    if (this.#connectedTo !== lost) this.remakes.clusterChanged();
    this.#servers = clientUrls(this.nc);
    this.#paused = false;
    this.#heard = true;
    if (this.#consumerServer === undefined || this.#consumerServer === lost) return this.#remake();
    this.#suspectGone(`the connection moved from ${lost} to ${this.#connectedTo}`);
  }

  // A server that leaves the cluster (killed, cut off) takes the consumers it held without a word to
  // the watches on the others; its peers tell every connection at once (an INFO without its URL),
  // where missed heartbeats take 2–3 s. Which server a URL is, is not said, so every watch whose
  // consumer is not on this connection's own server must be heard from within WATCH_SUSPECT_MS.
  // That costs nothing for those that are: only a lost consumer is made again.
  #serversChanged(): void {
    const now = clientUrls(this.nc);
    const left = [...this.#servers].filter((url) => !now.has(url));
    this.#servers = now;
    if (left.length > 0) this.remakes.clusterChanged();
    if (left.length === 0 || this.#paused || this.#consumerServer === this.nc.info?.server_name) return;
    this.#suspectGone(`${left.join(', ')} left the cluster`);
  }

  #suspectGone(why: string): void {
    if (this.#suspect || this.#inRemake() || this.#stopped) return;
    const heard = this.#heardCount;
    this.#suspect = setTimeout(() => {
      this.#suspect = undefined;
      if (this.#heardCount !== heard || this.#inRemake()) return;
      this.#remake(`${why}, and its consumer${this.#consumerServer ? ` on ${this.#consumerServer}` : ''} has not been heard from for ${WATCH_SUSPECT_MS} ms`);
    }, WATCH_SUSPECT_MS);
    this.#suspect.unref();
  }
}

/** The client URLs of the cluster's servers as the connection's last INFO said them. */
function clientUrls(nc: NatsConnection): Set<string> {
  return new Set(nc.info?.connect_urls ?? []);
}
