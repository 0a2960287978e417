// A backup's directory: per stream `<stream>/backup.json` (its configuration and state, as nats-server
// gave them) and `<stream>/stream.tar.s2` (its data), and `manifest.json`, written last, naming the
// streams in the order they were snapshotted. Files 0600, directories 0700: the plans and entries
// name every node, module and vault name of the mesh.
import { closeSync, constants, existsSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import * as v from 'valibot';
import { parseBoundedJson } from '../../../shared/contract/limits.ts';
import { readRegularFile, regularFileProblem } from '../../../shared/base/regular-file.ts';
import { fail, ok, type Parsed } from '../../../shared/base/result.ts';
import type { SnapshotMeta } from './snapshot.ts';

/** The file written last, naming every stream of a finished backup. */
export const MANIFEST_FILE = 'manifest.json';
const META_FILE = 'backup.json';
const DATA_FILE = 'stream.tar.s2';
/** The largest manifest or stream configuration read: far past any (a FIFO or a device in its place is none). */
const MAX_BACKUP_JSON_BYTES = 16 * 1024 * 1024;
/** The bytes of each chunk a restore sends. */
export const RESTORE_CHUNK_BYTES = 128 * 1024;

/** A stream's name as a file name: what nats-server allows (no dot, slash, wildcard or space), never `..`. */
const STREAM_NAME = /^[^\s./\\*>]{1,255}$/;

const ManifestSchema = v.object({ version: v.string(), at: v.string(), streams: v.array(v.pipe(v.string(), v.regex(STREAM_NAME, 'is not a stream name'))) });
/** What manifest.json says. */
export type Manifest = v.InferOutput<typeof ManifestSchema>;

const MetaSchema = v.object({ config: v.record(v.string(), v.unknown()), state: v.record(v.string(), v.unknown()) });

/** Whether `name` may be a directory of the backup. */
export function isStreamFileName(name: string): boolean {
  return STREAM_NAME.test(name);
}

/** Makes `dir` (0700) for a new backup; a reason when it is there and not an empty directory. */
export function makeBackupDir(dir: string): Parsed<{ made: boolean }> {
  if (!existsSync(dir)) return (mkdirSync(dir, { recursive: true, mode: 0o700 }), ok({ made: true }));
  if (!statSync(dir).isDirectory()) return fail(`${dir} is not a directory`);
  if (readdirSync(dir).length > 0) return fail(`${dir} is not empty: a backup goes into a new or empty directory`);
  return ok({ made: false });
}

/** Takes away what a backup that failed wrote: `dir` itself when it made it, else what is in it. */
export function removeBackup(dir: string, made: boolean): void {
  if (made) return rmSync(dir, { recursive: true, force: true });
  for (const name of readdirSync(dir)) rmSync(join(dir, name), { recursive: true, force: true });
}

/** Writes one stream's data as it comes (`write` each chunk), then its configuration and state once `take` resolves with them. */
export async function writeStream(dir: string, stream: string, take: (write: (chunk: Uint8Array) => void) => Promise<SnapshotMeta>): Promise<number> {
  mkdirSync(join(dir, stream), { mode: 0o700 });
  const fd = openSync(join(dir, stream, DATA_FILE), 'wx', 0o600);
  let bytes = 0;
  try {
    const meta = await take((chunk) => {
      writeSync(fd, chunk);
      bytes += chunk.length;
    });
    writeFileSync(join(dir, stream, META_FILE), JSON.stringify(meta, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
  } finally {
    closeSync(fd);
  }
  return bytes;
}

/** Writes manifest.json whole (a temporary name renamed), the backup's last step. */
export function writeManifest(dir: string, manifest: Manifest): void {
  const temp = join(dir, `${MANIFEST_FILE}.partial`);
  writeFileSync(temp, JSON.stringify(manifest, null, 2) + '\n', { mode: 0o600 });
  renameSync(temp, join(dir, MANIFEST_FILE));
}

/** A finished backup's manifest and each stream's configuration and state, or why `dir` is not one. */
export function readBackup(dir: string): Parsed<{ manifest: Manifest; metas: Map<string, SnapshotMeta> }> {
  const manifest = readJson(join(dir, MANIFEST_FILE), ManifestSchema, `${dir} holds no ${MANIFEST_FILE}: it is not a backup, or one that did not finish`);
  if (!manifest.ok) return manifest;
  const metas = new Map<string, SnapshotMeta>();
  for (const stream of manifest.value.streams) {
    const meta = readJson(join(dir, stream, META_FILE), MetaSchema, `${join(dir, stream, META_FILE)} is missing`);
    if (!meta.ok) return meta;
    if (meta.value.config['name'] !== stream)
      return fail(`${join(dir, stream, META_FILE)} is the configuration of another stream (${String(meta.value.config['name'])})`);
    const data = join(dir, stream, DATA_FILE);
    if (!existsSync(data)) return fail(`${data} is missing`);
    // A stream's data has no limit of its own; a regular file it must be (a FIFO would hang restore's read).
    const problem = regularFileProblem(data, Number.MAX_SAFE_INTEGER);
    if (problem !== undefined) return fail(problem);
    metas.set(stream, meta.value);
  }
  return ok({ manifest: manifest.value, metas });
}

/** A stream's data, read from its file a chunk at a time. */
export async function* streamData(dir: string, stream: string): AsyncGenerator<Uint8Array> {
  // Non-blocking: a FIFO swapped in since the look is opened without waiting for a writer, and read as empty.
  const file = await open(join(dir, stream, DATA_FILE), constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    for (;;) {
      const buffer = Buffer.alloc(RESTORE_CHUNK_BYTES);
      const { bytesRead } = await file.read(buffer, 0, buffer.length);
      if (bytesRead === 0) return;
      yield buffer.subarray(0, bytesRead);
    }
  } finally {
    await file.close();
  }
}

function readJson<T>(path: string, schema: v.GenericSchema<unknown, T>, missing: string): Parsed<T> {
  if (!existsSync(path)) return fail(missing);
  // A regular file within its limit: a FIFO in the backup must not hang restore, nor a device fill it.
  const read = readRegularFile(path, MAX_BACKUP_JSON_BYTES);
  if (!read.ok) return fail(read.reason);
  const parsed = parseBoundedJson(read.value, { maxBytes: MAX_BACKUP_JSON_BYTES });
  if (!parsed.ok) return fail(`${path}: ${parsed.reason}`);
  const checked = v.safeParse(schema, parsed.value);
  if (!checked.success) return fail(`${path}: ${v.getDotPath(checked.issues[0]) ?? 'its value'} ${checked.issues[0].message}`);
  return ok(checked.output);
}
