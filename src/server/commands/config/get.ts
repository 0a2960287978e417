// `config get NODE MODULE [KEY]` (DESIGN §13): one key's value as its bytes are, for a script or a
// file; without KEY every key of the module as `key=value` lines, for a person — each line safe text
// (§3), so a value's newline or escape shows as `\x0a` or `\x1b` and every key stays one line.
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { CONFIG } from '../../../shared/contract/buckets.ts';
import { compareKeys, configKey, parseConfigKey } from '../../../shared/contract/keys.ts';
import { safeText } from '../../../shared/cli/safe-text.ts';
import { firstInvalidUtf8 } from '../../../module/utf8.ts';
import { COMMAND_READ_TIMEOUT_MS, readAll } from '../../../shared/bus/watch/read-all.ts';
import { readStored } from '../input-bucket.ts';
import { describeTarget, type ConfigTarget } from './set.ts';

type Say = (line: string) => void;

// Fatal: a value that is not UTF-8 is said, not shown with replacement characters.
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Hands the value's bytes to `write` as they are, or, for a terminal, as it shows them
 * (valueForTerminal); resolves false (said on `err`) when the key holds none.
 */
export async function getConfig(kv: KV, target: ConfigTarget, write: (bytes: Uint8Array) => void, err: Say, terminal = false): Promise<boolean> {
  const stored = await readStored(kv, configKey(target.node, target.module, target.key));
  if (stored === undefined) {
    err(`${describeTarget(target)} holds no value`);
    return false;
  }
  write(terminal ? new TextEncoder().encode(valueForTerminal(stored.value)) : stored.value);
  return true;
}

/**
 * A value as a terminal is shown it (DESIGN §3, text shown to a person): safe text — a control
 * character as `\x1b`, a newline as `\x0a` — each byte that is not UTF-8 as `\xHH` too (a lone
 * 0x9b is CSI to some terminals), and a newline after it, so the prompt starts a line of its own.
 */
export function valueForTerminal(bytes: Uint8Array): string {
  let shown = '';
  let rest = bytes;
  for (let bad = firstInvalidUtf8(rest); bad !== undefined; bad = firstInvalidUtf8(rest)) {
    shown += `${safeText(UTF8.decode(rest.subarray(0, bad)))}\\x${rest[bad]!.toString(16).padStart(2, '0')}`;
    rest = rest.subarray(bad + 1);
  }
  return `${shown}${safeText(UTF8.decode(rest))}\n`;
}

/**
 * Says every key of the module as a `key=value` line, in key order (the line printer makes each
 * safe text); a key out of shape or a value that is not UTF-8 is said on `err` with its key, never
 * left out quietly. Resolves how many keys the module has.
 */
export async function listConfig(nc: NatsConnection, node: string, module: string, out: Say, err: Say): Promise<number> {
  const stored = await readAll(nc, CONFIG, `${node}.${module}.>`, { timeoutMs: COMMAND_READ_TIMEOUT_MS });
  const lines: { key: string; line: string }[] = [];
  for (const [raw, bytes] of stored) {
    const parsed = parseConfigKey(raw);
    if (!parsed.ok) {
      err(`${CONFIG} ${raw}: key out of shape: ${parsed.reason}`);
      continue;
    }
    const { key } = parsed.value;
    try {
      lines.push({ key, line: `${key}=${UTF8.decode(bytes)}` });
    } catch {
      err(`${CONFIG} ${raw}: the value of ${key} is ${bytes.length} bytes that are not UTF-8 (config get ${node} ${module} ${key} prints them as they are)`);
    }
  }
  lines.sort((a, b) => compareKeys(a.key, b.key));
  for (const { line } of lines) out(line);
  if (stored.size === 0) err(`${node} ${module} has no config keys (${CONFIG} ${node}.${module}.>)`);
  return stored.size;
}
