// `config set NODE MODULE KEY VALUE|-` and `config rm NODE MODULE KEY` (DESIGN §13): one key of
// `mesh-config_resolved` written or deleted, its value raw UTF-8 bytes (§3).
import type { KV } from '@nats-io/kv';
import { CONFIG } from '../../../shared/contract/buckets.ts';
import { configKey } from '../../../shared/contract/keys.ts';
import { fail, ok, type Parsed } from '../../../shared/base/result.ts';
import type { ValueSource } from '../../options.ts';
import { isUnchanged, readStored } from '../input-bucket.ts';

type Say = (line: string) => void;

/** One config key of one module on one node. */
export type ConfigTarget = { node: string; module: string; key: string };

// Fatal: a value that is not UTF-8 is refused, never written with replacement characters.
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The value's bytes: the argument as UTF-8, or stdin's bytes as they are when they are UTF-8 (a trailing newline kept). */
export async function readValue(source: ValueSource, stdin: () => Promise<Parsed<Uint8Array>>): Promise<Parsed<Uint8Array>> {
  if ('text' in source) return ok(new TextEncoder().encode(source.text));
  const read = await stdin();
  if (!read.ok) return read;
  try {
    UTF8.decode(read.value);
  } catch {
    return fail('config set: the value read from stdin is not UTF-8 text');
  }
  return read;
}

/** Says why a value cannot travel as one message of this bus; nothing when it can. */
export function valueSizeProblem(what: string, bytes: number, maxPayload: number): string | undefined {
  return bytes > maxPayload ? `${what}: the value is ${bytes} bytes, past the bus's max payload of ${maxPayload} bytes` : undefined;
}

/** How a key is named in a line: the module's key and where it is stored. */
export function describeTarget(t: ConfigTarget): string {
  return `${t.node} ${t.module} ${t.key} (${CONFIG} ${configKey(t.node, t.module, t.key)})`;
}

/** Writes the value unless the key holds these bytes already; one line said, with the revision the key holds, so `trace` can be run with it in mind. */
export async function setConfig(kv: KV, target: ConfigTarget, value: Uint8Array, out: Say): Promise<void> {
  const key = configKey(target.node, target.module, target.key);
  const stored = await readStored(kv, key);
  if (isUnchanged(stored, value))
    return out(`${target.node} ${target.module} ${target.key} holds that value already: ${revisionOf(key, stored!.revision)}, unchanged`);
  const revision = await kv.put(key, value);
  out(`set ${target.node} ${target.module} ${target.key}: ${revisionOf(key, revision)}, ${value.length} bytes`);
}

/** The revision a key holds, written as `trace` takes the key (`mesh-config_resolved:n1.web.color rev 42`, DESIGN §14). */
function revisionOf(key: string, revision: number): string {
  return `${CONFIG}:${key} rev ${revision}`;
}

/** Deletes the key; resolves false (and says so) when it holds no value, true when deleted. */
export async function removeConfig(kv: KV, target: ConfigTarget, out: Say, err: Say): Promise<boolean> {
  const key = configKey(target.node, target.module, target.key);
  if ((await readStored(kv, key)) === undefined) {
    err(`${describeTarget(target)} holds no value: nothing to remove`);
    return false;
  }
  await kv.delete(key);
  out(`removed ${describeTarget(target)}: the files naming it wait for a value`);
  return true;
}
