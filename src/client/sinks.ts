// Where a node's client hands what its stages make (client/node.ts builds the stages and takes the
// sinks): a module's files to the engine, its needs and report to the reporter, its items to the
// items writer, and asks served and changes said. The bus's sinks are here, for the client and
// --once; --dry-run hands in a capture (client/commands/dry-run/capture.ts).
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { openKv } from '../shared/bus/bus.ts';
import { APPLIED, COLLECT, NEEDS } from '../shared/contract/buckets.ts';
import { KvPublisher } from '../shared/bus/kv-publisher.ts';
import { errorText } from '../shared/base/errors.ts';
import type { Logger } from '../shared/cli/log.ts';
import { publishChanged, serveAsks, type AskView, type Changed } from './asks.ts';
import type { EngineClient } from './handoff/fill-socket.ts';
import { ItemWriter } from './report/items.ts';
import { Reporter, type KeyWriter, type ReportBody } from './report/reporter.ts';
import { readLeftBehind, type LeftBehind } from './report/stale-needs.ts';
import { readRecord, WrittenRecord } from './report/written.ts';
import { collectKey } from '../shared/contract/keys.ts';
import type { NodeItems } from './sources/collected.ts';

/** Takes each module's needs, report and removal; `known` takes the needs left from before this start. */
export type ReportSink = Pick<Reporter, 'needs' | 'report' | 'removed' | 'known' | 'close'>;

/** Takes each module's items, and deletes an item left from before this start by its key. */
export type ItemSink = Pick<ItemWriter, 'record' | 'removed'> & {
  /** Deletes the item at `key` (its contributor's plan went, or no longer has its collection, while the client was down). */
  deleteLeft(key: string): void;
};

/** Serves the node's asks and says what changed for them (DESIGN §7 point 13). */
export type AskSink = {
  /** Serves `prov.ask.<node>` from `view` until stopped; resolves once the bus knows the handler. */
  serve(view: AskView): Promise<{ stop(): void }>;
  /** Says `prov.changed` notices. */
  changed(notices: Iterable<Changed>): void;
};

/** Where the client's stages hand their work: the bus's (busSinks), or --dry-run's capture. */
export type ClientSinks = {
  /** Takes a module's filled files: the engine's fill socket, or a capture. */
  engine: EngineClient;
  /** Takes each module's needs and report. */
  reporter: ReportSink;
  /** What the node's client left before this start (its modules planned now: `planned`); undefined when it could not be read. */
  leftBehind(planned: ReadonlySet<string>): Promise<LeftBehind | undefined>;
  /** Saves what is still to be saved of the client's own records (its written keys) before it stops. */
  flush?(): Promise<void>;
  /** Takes each module's items. */
  items: ItemSink;
  /** Serves asks and says changes; absent, none is answered and nothing said. */
  asks?: AskSink;
};

/**
 * Opens the sinks once the client's buckets are checked and before any watch starts; `items` is
 * the node's items as the collected source's watch will keep them (what the bucket holds).
 */
export type OpenSinks = (items: NodeItems) => Promise<ClientSinks>;

/** What the bus's sinks need. */
export type BusSinkOptions = {
  /** The node's connection to the bus. */
  nc: NatsConnection;
  /** The node whose needs, reports and items are written. */
  node: string;
  /** The client's cache directory: its record of written keys is kept there (report/written.ts). */
  cacheDir: string;
  log: Logger;
  /** The client's end of the engine's fill socket. */
  engine: EngineClient;
  /** The inbox prefix the connection was made with (`_INBOX_node_<node>`, DESIGN §11), for the acks of the reporter's puts. */
  inboxPrefix: string;
  /** Hears each report a module's run writes, once written (--once judges the node by them, client/commands/once/command.ts). */
  onReport?: (module: string, report: ReportBody) => void;
};

/**
 * Puts as pipelined publishes (no request, timer or stack trace per write), deletes as the bucket's
 * own; `noted` hears a key before its put is asked (`value`) and once its delete is done (undefined).
 */
function keyWriter(nc: NatsConnection, bucket: string, kv: KV, inboxPrefix: string, noted: (key: string, value?: Uint8Array) => void): KeyWriter {
  const publisher = new KvPublisher(nc, bucket, { inboxPrefix });
  return {
    put: (key, value) => (noted(key, value), publisher.put(key, value)),
    delete: async (key) => {
      await kv.delete(key);
      noted(key);
    },
  };
}

/** The collect bucket as the items writer uses it, each key it puts or deletes noted in `record`. */
function recordedItems(kv: KV, record: WrittenRecord): Pick<KV, 'put' | 'delete'> {
  return {
    put: (key, value) => (record.item(key, true), kv.put(key, value)),
    delete: async (key) => {
      await kv.delete(key);
      record.item(key, false);
    },
  };
}

/**
 * The bus's sinks: the engine's socket, needs and reports written to their buckets (and the needs
 * left from before read back), items recorded in the collect bucket, asks served on `prov.ask`.
 */
export function busSinks(o: BusSinkOptions): OpenSinks {
  const { nc, node, log } = o;
  return async (items) => {
    const [needsKv, appliedKv, collectKv] = await Promise.all([openKv(nc, NEEDS), openKv(nc, APPLIED), openKv(nc, COLLECT)]);
    // Read before this client writes: the record it keeps from now on starts from what it held.
    const recorded = await readRecord(o.cacheDir, node, log);
    const record = new WrittenRecord(o.cacheDir, node, log, recorded);
    const decoder = new TextDecoder();
    const noteNeed = (key: string, value?: Uint8Array) => record.need(key, value && decoder.decode(value));
    const noteReport = (key: string, value?: Uint8Array) => record.report(key.slice(node.length + 1), value !== undefined);
    const reporter = new Reporter(
      nc,
      node,
      keyWriter(nc, NEEDS, needsKv, o.inboxPrefix, noteNeed),
      keyWriter(nc, APPLIED, appliedKv, o.inboxPrefix, noteReport),
      log,
    );
    const writer = new ItemWriter(node, recordedItems(collectKv, record), (module) => items.itemsOfContributor(module), log);
    return {
      engine: o.engine,
      reporter: o.onReport ? heardReporter(reporter, o.onReport) : reporter,
      leftBehind: (planned) => readLeftBehind(nc, node, recorded, planned, log),
      flush: () => record.flush(),
      items: {
        record: (module, filled) => writer.record(module, filled),
        removed: (module) => writer.removed(module),
        deleteLeft: (key) =>
          void recordedItems(collectKv, record)
            .delete(key)
            .catch((err: unknown) => log.error(`${COLLECT} ${key}: ${errorText(err)}`)),
      },
      asks: {
        async serve(view) {
          const served = serveAsks(nc, node, view, log);
          // Ready means the bus knows the ask handler: an ask sent once this resolves finds it.
          await nc.flush();
          return served;
        },
        changed: (notices) => publishChanged(nc, node, notices),
      },
    };
  };
}

/** The reporter, with each report also told to `onReport` once its write is done (or given up). */
function heardReporter(reporter: Reporter, onReport: (module: string, report: ReportBody) => void): ReportSink {
  return {
    needs: (module, entries) => reporter.needs(module, entries),
    removed: (module, build) => reporter.removed(module, build),
    known: (module, stored) => reporter.known(module, stored),
    close: () => reporter.close(),
    report: (module, body) => reporter.report(module, body).finally(() => onReport(module, body)),
  };
}
