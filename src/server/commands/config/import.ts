// `config import FILE|-` (DESIGN §13): a file `{node: {module: {key: value}}}` checked whole within
// the limits of §3 before anything is written, then written as one burst — pipelined puts, so each
// node's client fills every module it names once (its settle window), not once a key.
import type { NatsConnection } from '@nats-io/transport-node';
import * as v from 'valibot';
import { CONFIG } from '../../../shared/contract/buckets.ts';
import { INBOX_PREFIXES } from '../../../shared/bus/inbox.ts';
import { checkName, configKey } from '../../../shared/contract/keys.ts';
import { KvPublisher } from '../../../shared/bus/kv-publisher.ts';
import { parseBoundedJson } from '../../../shared/contract/limits.ts';
import { errorText } from '../../../shared/base/errors.ts';
import { fail, type Parsed } from '../../../shared/base/result.ts';
import { validate } from '../../../shared/contract/decode.ts';
import { configTargetProblem, isUtf8Text } from './key.ts';
import type { ConfigTarget } from './set.ts';

type Say = (line: string) => void;

/** The largest import file read: far past any module's config, short of what would exhaust the command's memory. */
export const MAX_IMPORT_BYTES = 64 * 1024 * 1024;
/** The most failed puts said one by one; the rest are counted. */
const MAX_FAILURES_SAID = 10;

/** One key of an import, its value as the bytes to write. */
export type ConfigEntry = ConfigTarget & { value: Uint8Array };

type Obj = Record<string, unknown>;
const isObject = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);

/** A path item of an issue, so it is said as `field "n1.web.db.host"`. */
function at(input: Obj, key: string): v.ObjectPathItem {
  return { type: 'object', origin: 'value', input, key, value: input[key] };
}

/**
 * The import file's shape: an object of nodes, each an object of modules, each an object of keys
 * whose every value is a string; each name of its grammar (a config key as `config set` takes it).
 * Walked by hand rather than with valibot's record, which skips `constructor` and `prototype`
 * (valid names here) without an issue. The first problem is the one said.
 */
export const ImportSchema = v.pipe(
  v.custom<Obj>(isObject, 'is not an object of nodes'),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const entries: ConfigEntry[] = [];
    const refuse = (message: string, path: v.ObjectPathItem[]) => (addIssue({ message, path: path as [v.ObjectPathItem, ...v.ObjectPathItem[]] }), NEVER);
    const encoder = new TextEncoder();
    for (const [node, modules] of Object.entries(dataset.value)) {
      const nodeAt = at(dataset.value, node);
      const nodeBad = checkName('node', node);
      if (nodeBad !== undefined) return refuse(`is refused: ${nodeBad}`, [nodeAt]);
      if (!isObject(modules)) return refuse('is not an object of modules', [nodeAt]);
      for (const [module, keys] of Object.entries(modules)) {
        const moduleAt = at(modules, module);
        const moduleBad = checkName('module', module);
        if (moduleBad !== undefined) return refuse(`is refused: ${moduleBad}`, [nodeAt, moduleAt]);
        if (!isObject(keys)) return refuse('is not an object of config keys', [nodeAt, moduleAt]);
        for (const [key, value] of Object.entries(keys)) {
          const path = [nodeAt, moduleAt, at(keys, key)];
          const problem = configTargetProblem(node, module, key);
          if (problem !== undefined) return refuse(`is refused: ${problem}`, path);
          if (typeof value !== 'string') return refuse('is not a string (every value is text)', path);
          if (!isUtf8Text(value)) return refuse('is not UTF-8 text (a lone surrogate)', path);
          entries.push({ node, module, key, value: encoder.encode(value) });
        }
      }
    }
    return entries;
  }),
);

/** Reads an import file's bytes into its entries, within MAX_IMPORT_BYTES and the JSON depth of §3; the reason names the first problem. */
export function readImport(data: Uint8Array): Parsed<ConfigEntry[]> {
  const raw = parseBoundedJson(data, { maxBytes: MAX_IMPORT_BYTES });
  if (!raw.ok) return fail(`the import file is ${raw.reason}`);
  const checked = validate(ImportSchema, raw.value);
  return checked.ok ? checked : fail(`the import file's ${checked.reason}`);
}

/** Puts every entry at once through one publisher; says a line per module and one in total, or each failure. Resolves whether every put was acked. */
export async function importConfig(nc: NatsConnection, entries: readonly ConfigEntry[], out: Say, err: Say): Promise<boolean> {
  const publisher = new KvPublisher(nc, CONFIG, { inboxPrefix: INBOX_PREFIXES.admin });
  const puts = entries.map((e) => publisher.put(configKey(e.node, e.module, e.key), e.value));
  const results = await Promise.allSettled(puts);
  publisher.close();
  const failed = results.flatMap((r) => (r.status === 'rejected' ? [errorText(r.reason)] : []));
  failed.slice(0, MAX_FAILURES_SAID).forEach((line) => err(`${CONFIG}: ${line}`));
  if (failed.length > MAX_FAILURES_SAID) err(`${CONFIG}: ${failed.length - MAX_FAILURES_SAID} more puts failed`);
  if (failed.length > 0) {
    err(`imported ${entries.length - failed.length} of ${entries.length} keys: ${failed.length} not written`);
    return false;
  }
  const modules = new Map<string, number>();
  for (const e of entries) modules.set(`${e.node} ${e.module}`, (modules.get(`${e.node} ${e.module}`) ?? 0) + 1);
  for (const [module, count] of modules) out(`imported ${counted(count, 'key')} of ${module}`);
  const nodes = new Set(entries.map((e) => e.node)).size;
  out(`imported ${counted(entries.length, 'key')} (${counted(modules.size, 'module')} on ${counted(nodes, 'node')}) into ${CONFIG} in one burst`);
  return true;
}

/** `1 key`, `2 keys`. */
function counted(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
