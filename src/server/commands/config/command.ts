// `config set|get|rm|import` (DESIGN §13) on `mesh-config_resolved`: each action made ready before the
// bus is reached — a value read from stdin, an import file read and checked whole — so input that is
// wrong exits 2 with nothing written, then run with the admin login.
import { statSync } from 'node:fs';
import type { NatsConnection } from '@nats-io/transport-node';
import { CONFIG } from '../../../shared/contract/buckets.ts';
import { readRegularFile } from '../../../shared/base/regular-file.ts';
import { fail, ok, type Parsed } from '../../../shared/base/result.ts';
import type { ConfigArgs } from '../../options.ts';
import { inputFailure, openInputBucket } from '../input-bucket.ts';
import { getConfig, listConfig } from './get.ts';
import { importConfig, MAX_IMPORT_BYTES, readImport, type ConfigEntry } from './import.ts';
import { readValue, removeConfig, setConfig, valueSizeProblem, type ConfigTarget } from './set.ts';

type Say = (line: string) => void;

/** What a config action reads and writes besides the bus. */
export type ConfigIo = {
  /** A line for stdout (safe text). */
  out: Say;
  /** A line for stderr (safe text). */
  err: Say;
  /** Bytes for stdout as they are: `config get` of one key. */
  write(bytes: Uint8Array): void;
  /** Whether stdout is a terminal: `config get` of one key shows it escaped there (§3), its bytes elsewhere. */
  terminal: boolean;
  /** Stdin, read whole up to `maxBytes` (a reason past it): a `-` value or import file. */
  readStdin(maxBytes: number): Promise<Parsed<Uint8Array>>;
};

/** An action ready to run: every value in hand and checked against the grammars. */
export type ReadyConfig =
  | { action: 'set'; target: ConfigTarget; value: Uint8Array }
  | { action: 'get'; node: string; module: string; key?: string }
  | { action: 'rm'; target: ConfigTarget }
  | { action: 'import'; entries: ConfigEntry[] };

/** Reads what the action needs (a `-` value, the import file) and checks it; a reason is a usage error (exit 2). */
export async function prepareConfig(args: ConfigArgs, io: Pick<ConfigIo, 'readStdin'>): Promise<Parsed<ReadyConfig>> {
  if (args.action === 'get' || args.action === 'rm') {
    const { action, ...rest } = args;
    return action === 'get' ? ok({ action, ...rest }) : ok({ action, target: rest as ConfigTarget });
  }
  if (args.action === 'set') {
    // A value past the bus's max payload is refused once connected; this bound only keeps memory in check.
    const value = await readValue(args.value, () => io.readStdin(MAX_IMPORT_BYTES));
    return value.ok ? ok({ action: 'set', target: { node: args.node, module: args.module, key: args.key }, value: value.value }) : value;
  }
  const data = await readImportFile(args.file, io.readStdin);
  if (!data.ok) return data;
  const entries = readImport(data.value);
  return entries.ok ? ok({ action: 'import', entries: entries.value }) : entries;
}

/** Runs a ready action; resolves the exit code: 0 done, 1 a key missing or the bus failing, 2 a value past the bus's max payload. */
export async function runConfig(nc: NatsConnection, ready: ReadyConfig, replicas: number, io: ConfigIo): Promise<number> {
  const tooBig = payloadProblem(ready, nc.info?.max_payload);
  if (tooBig !== undefined) return (io.err(tooBig), 2);
  try {
    const kv = await openInputBucket(nc, { bucket: CONFIG, replicas }, io.err);
    switch (ready.action) {
      case 'set':
        await setConfig(kv, ready.target, ready.value, io.out);
        return 0;
      case 'rm':
        return (await removeConfig(kv, ready.target, io.out, io.err)) ? 0 : 1;
      case 'get':
        if (ready.key === undefined) return (await listConfig(nc, ready.node, ready.module, io.out, io.err), 0);
        return (await getConfig(kv, { node: ready.node, module: ready.module, key: ready.key }, io.write, io.err, io.terminal)) ? 0 : 1;
      case 'import':
        return (await importConfig(nc, ready.entries, io.out, io.err)) ? 0 : 1;
    }
  } catch (e) {
    return (io.err(inputFailure(e, CONFIG)), 1);
  }
}

/** The first value too large for one message of this bus, said with its key. */
function payloadProblem(ready: ReadyConfig, maxPayload: number | undefined): string | undefined {
  if (maxPayload === undefined) return undefined;
  const values = ready.action === 'set' ? [{ ...ready.target, value: ready.value }] : ready.action === 'import' ? ready.entries : [];
  for (const e of values) {
    const problem = valueSizeProblem(`${e.node} ${e.module} ${e.key}`, e.value.length, maxPayload);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/**
 * The import file's bytes (stdin for `-`): a regular file only — a FIFO, a device or a directory
 * refused at once — refused past MAX_IMPORT_BYTES by its size, before it is read.
 */
async function readImportFile(file: string, readStdin: ConfigIo['readStdin']): Promise<Parsed<Uint8Array>> {
  if (file === '-') return readStdin(MAX_IMPORT_BYTES);
  const read = readRegularFile(file, MAX_IMPORT_BYTES);
  if (read.ok) return read;
  // `config import /dev/stdin` (a pipe) or `<(…)` is a stream: `-` reads one, within the same limit.
  const info = statSync(file, { throwIfNoEntry: false });
  const stream = info !== undefined && (info.isFIFO() || info.isCharacterDevice() || info.isSocket());
  return fail(`config import: ${read.reason}${stream ? ' (give - to read standard input)' : ''}`);
}

/** Reads a stream to its end, refused as soon as it passes `maxBytes`. */
export async function readStreamWithin(stream: AsyncIterable<Uint8Array | string>, maxBytes: number): Promise<Parsed<Uint8Array>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    size += bytes.length;
    if (size > maxBytes) return fail(`stdin holds more than ${maxBytes} bytes`);
    chunks.push(bytes);
  }
  return ok(new Uint8Array(Buffer.concat(chunks)));
}
