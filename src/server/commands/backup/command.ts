// `server.js backup DIR` and `server.js restore DIR [--replicas N]` (deploy/README.md, "Backup and
// restore"), with the admin login: nats-server's own stream snapshots, so a restored bucket holds
// every entry with the revision it had, on one server or a cluster, whichever the backup came from.
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { MODULES } from '../../../shared/contract/buckets.ts';
import { describeBusError, errorText, isPermissionViolation } from '../../../shared/base/errors.ts';
import { INBOX_PREFIXES } from '../../../shared/bus/inbox.ts';
import { isStreamNotFound } from '../../../shared/bus/jetstream-errors.ts';
import { VERSION } from '../../../shared/cli/version.ts';
import type { BackupOptions, RestoreOptions } from '../../options.ts';
import { isStreamFileName, makeBackupDir, readBackup, removeBackup, streamData, writeManifest, writeStream } from './files.ts';
import { restoreStream } from './restore-stream.ts';
import { JetStreamRefusal, snapshotStream } from './snapshot.ts';

type Say = (line: string) => void;

/** nats-server's error code for a restore of a stream whose name is taken. */
const STREAM_NAME_TAKEN = 10130;

/**
 * The order streams are snapshotted in: the seat's and the nodes' buckets, then the compositions,
 * then each archives store. A plan names a composition's build and a composition its archive, each
 * written after what it names: snapshotted before it, every name the backup holds finds its target.
 */
export function backupOrder(streams: readonly string[]): string[] {
  const rank = (s: string) => (s.startsWith('OBJ_') ? 2 : s === `KV_${MODULES}` ? 1 : 0);
  return [...streams].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/** What a stream's name says of it: `bucket NAME` for KV_NAME, `object store NAME` for OBJ_NAME. */
export function streamLabel(stream: string): string {
  if (stream.startsWith('KV_')) return `stream ${stream} (bucket ${stream.slice(3)})`;
  if (stream.startsWith('OBJ_')) return `stream ${stream} (object store ${stream.slice(4)})`;
  return `stream ${stream}`;
}

/** Runs `backup`: 0 when every stream is in DIR, 1 when the bus failed (DIR then left as it was), 2 when DIR cannot take a backup. */
export async function runBackup(opts: BackupOptions, connect: () => Promise<NatsConnection>, out: Say, err: Say): Promise<number> {
  let made: boolean;
  try {
    const dir = makeBackupDir(opts.dir);
    if (!dir.ok) return (err(`backup: ${dir.reason}; nothing written`), 2);
    made = dir.value.made;
  } catch (e) {
    return (err(`backup: cannot make ${opts.dir}: ${errorText(e)}`), 2);
  }
  // A bus not reached leaves nothing behind either: the directory goes with the line the connection says.
  const nc = await connect().catch((e: unknown) => {
    removeBackup(opts.dir, made);
    throw e;
  });
  let current = 'the list of streams';
  try {
    const streams: string[] = [];
    for await (const name of (await jetstreamManager(nc, { checkAPI: false })).streams.names()) streams.push(name);
    const unsafe = streams.find((s) => !isStreamFileName(s));
    if (unsafe !== undefined) throw new Error(`the stream name ${JSON.stringify(unsafe)} cannot be a directory's`);
    const ordered = backupOrder(streams);
    for (const stream of ordered) {
      current = streamLabel(stream);
      let meta: Awaited<ReturnType<typeof snapshotStream>> | undefined;
      const bytes = await writeStream(opts.dir, stream, async (write) => (meta = await snapshotStream(nc, stream, INBOX_PREFIXES.admin, write)));
      out(`backed up ${current}: ${describeState(meta!.state)}, ${bytes} bytes`);
    }
    writeManifest(opts.dir, { version: VERSION, at: new Date().toISOString(), streams: ordered });
    out(`backup of ${ordered.length} streams in ${opts.dir}: restore it with server.js restore ${opts.dir}`);
    return 0;
  } catch (e) {
    removeBackup(opts.dir, made);
    err(`backup: ${current}: ${whyFailed(e)}; ${made ? `${opts.dir} removed` : `${opts.dir} emptied`}`);
    return 1;
  } finally {
    await nc.close();
  }
}

/** Runs `restore`: 0 when every stream is made, 1 when one is there already or the bus failed, 2 when DIR is not a finished backup. */
export async function runRestore(opts: RestoreOptions, connect: () => Promise<NatsConnection>, out: Say, err: Say): Promise<number> {
  const backup = readBackup(opts.dir);
  if (!backup.ok) return (err(`restore: ${backup.reason}; nothing written`), 2);
  const { manifest, metas } = backup.value;
  const nc = await connect();
  const done: string[] = [];
  let current = 'the streams already there';
  try {
    const taken = await streamsThere(nc, manifest.streams);
    if (taken.length > 0) {
      err(`restore: this bus has the streams ${taken.join(', ')} already: restore goes into a bus without them (a new bus, before init); nothing written`);
      return 1;
    }
    for (const stream of manifest.streams) {
      current = streamLabel(stream);
      const made = await restoreStream(nc, metas.get(stream)!, streamData(opts.dir, stream), opts.replicas);
      done.push(stream);
      out(
        `restored ${current}: ${count(made.messages, 'message')}, last sequence ${made.lastSeq}, ${made.replicas} ${made.replicas === 1 ? 'copy' : 'copies'}`,
      );
    }
    out(`restored ${done.length} streams from ${opts.dir} (backed up ${manifest.at}); run init with the mesh's flags next`);
    return 0;
  } catch (e) {
    const before = done.length === 0 ? 'none restored' : `restored before it: ${done.join(', ')}`;
    err(`restore: ${current}: ${whyFailed(e, opts)} (${before})`);
    return 1;
  } finally {
    await nc.close();
  }
}

/** The streams of `streams` the bus has already. */
async function streamsThere(nc: NatsConnection, streams: readonly string[]): Promise<string[]> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const there: string[] = [];
  for (const stream of streams) {
    try {
      await jsm.streams.info(stream);
      there.push(stream);
    } catch (e) {
      if (!isStreamNotFound(e)) throw e;
    }
  }
  return there;
}

function describeState(state: Record<string, unknown>): string {
  return `${count(Number(state['messages'] ?? 0), 'message')}, last sequence ${Number(state['last_seq'] ?? 0)}`;
}

/** `1 message`, `2 messages`. */
function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** Why a step failed, with what to do where it is known. */
function whyFailed(e: unknown, restore?: RestoreOptions): string {
  if (isPermissionViolation(e)) return `the bus refuses it (${errorText(e)}): backup and restore need the admin login (its seed, admin.nk, as --nkey)`;
  if (e instanceof JetStreamRefusal && e.code === STREAM_NAME_TAKEN) return `nats-server refuses it: ${e.message} (made since the check?)`;
  if (e instanceof JetStreamRefusal && /replicas > 1 not supported|insufficient resources|no suitable peers/i.test(e.message)) {
    const asked = restore?.replicas === undefined ? 'the copies it had when backed up' : `${restore.replicasFrom} ${restore.replicas}`;
    return `nats-server cannot hold ${asked} (${e.message}): give restore --replicas with at most the bus's JetStream servers`;
  }
  if (e instanceof JetStreamRefusal) return `nats-server refuses it: ${e.message}`;
  return describeBusError(e);
}
