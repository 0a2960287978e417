// The consumers file (`${consumers:<provision>}`, DESIGN §7 point 8): read and validated, turned
// into what the provider must serve, and watched through its directory, because the engine
// replaces the file by a rename. The file holds credentials: no reason said here quotes its text.
import { createHash } from 'node:crypto';
import { watch } from 'node:fs';
import { basename, dirname } from 'node:path';
import * as v from 'valibot';
import { requestDigest } from '../shared/contract/bound-request.ts';
import { canonicalJson } from '../shared/contract/canonical-json.ts';
import { boundKey, NAME_PATTERN, SEGMENT_NAME_PATTERN } from '../shared/contract/keys.ts';
import { parseBoundedJson } from '../shared/contract/limits.ts';
import { readRegularFileIfThere } from '../shared/base/regular-file.ts';
import { deriveLogin } from './logins.ts';
import type { ConsumerEntry, Grant } from './types.ts';

/** Largest consumers file read, in bytes. */
export const MAX_CONSUMERS_FILE_BYTES = 16 * 1024 * 1024;

const name = v.pipe(v.string(), v.regex(NAME_PATTERN, 'is not a valid name'));
// The file holds credentials: the message names the grammar, never the text that missed it.
const local = v.nullable(v.pipe(v.string(), v.regex(SEGMENT_NAME_PATTERN, 'is not a local name (A-Z a-z 0-9 _ -, at most 128)')));

const segment = v.pipe(v.string(), v.regex(SEGMENT_NAME_PATTERN, 'is not a provision, local or secret name (A-Z a-z 0-9 _ -, at most 128)'));

/** A consumer's provision entry as its plan holds it (DESIGN §4): what the bound entry's `for` names. */
const ProvisionEntrySchema = v.object({
  provider: name,
  provision: segment,
  node: name,
  local: v.optional(segment),
  name: v.optional(segment),
  values: v.optional(v.record(v.string(), v.unknown())),
});

/** The consumers file: a JSON list of ConsumerEntry. */
export const ConsumersFileSchema = v.array(
  v.object({
    consumer: name,
    module: name,
    local,
    credential: v.pipe(v.string(), v.minLength(1, 'is empty')),
    value: v.record(v.string(), v.unknown()),
    provision: v.optional(ProvisionEntrySchema),
  }),
);

/**
 * What reading the file gave: no file (not known: never taken as no consumers), its entries, why its
 * text is not usable, or why it was not read (no regular file, past the limit, unreadable).
 */
export type ConsumersRead =
  | { state: 'absent' }
  | { state: 'read'; bytes: Buffer; entries: ConsumerEntry[] }
  | { state: 'malformed'; bytes: Buffer; reason: string }
  | { state: 'refused'; reason: string };

/**
 * Reads and validates the consumers file; only a missing file is `absent`. A regular file only,
 * within MAX_CONSUMERS_FILE_BYTES: a FIFO or a device put in its place is `refused` at once, never
 * waited on (a read left in one of Node's file threads held the process alive after SIGTERM).
 */
export async function readConsumersFile(path: string): Promise<ConsumersRead> {
  const read = readRegularFileIfThere(path, MAX_CONSUMERS_FILE_BYTES);
  if (read.state !== 'read') return read;
  const bytes = Buffer.from(read.bytes.buffer, read.bytes.byteOffset, read.bytes.byteLength);
  const parsed = parseBoundedJson(bytes, { maxBytes: MAX_CONSUMERS_FILE_BYTES });
  // JSON.parse's message quotes the text around the fault, which may be a credential.
  if (!parsed.ok) return { state: 'malformed', bytes, reason: parsed.reason.startsWith('not JSON') ? 'is not JSON' : parsed.reason };
  const checked = v.safeParse(ConsumersFileSchema, parsed.value);
  if (!checked.success) return { state: 'malformed', bytes, reason: checked.issues.slice(0, 3).map(describeIssue).join('; ') };
  const twice = firstDuplicate(checked.output);
  if (twice) return { state: 'malformed', bytes, reason: `names the consumer ${twice} twice` };
  const astray = checked.output.find((e) => !provisionAgrees(e));
  if (astray)
    return {
      state: 'malformed',
      bytes,
      reason: `gives ${labelOf(astray.consumer, astray.module, astray.local)} a provision whose local or values are not the entry's`,
    };
  return { state: 'read', bytes, entries: checked.output };
}

/** Names the field and what it should be; a schema issue's own message would quote the value, a credential perhaps. */
function describeIssue(issue: v.BaseIssue<unknown>): string {
  const path = v.getDotPath(issue);
  const field = path ? `field "${path}"` : 'the file';
  if (issue.kind !== 'schema') return `${field} ${issue.message}`;
  return issue.received === 'undefined' ? `${field} is missing` : `${field} is not ${issue.expected}`;
}

/** The consumer named by two entries, if any: both would be served under one key and one login. */
function firstDuplicate(entries: ConsumerEntry[]): string | undefined {
  const seen = new Set<string>();
  for (const e of entries) {
    const label = labelOf(e.consumer, e.module, e.local);
    if (seen.has(label)) return label;
    seen.add(label);
  }
  return undefined;
}

/** Whether an entry's provision asks what the entry says (its local and values): `for` must name the request served. */
function provisionAgrees(e: ConsumerEntry): boolean {
  if (!e.provision) return true;
  return (e.provision.local ?? null) === e.local && canonicalJson(e.provision.values ?? {}) === canonicalJson(e.value);
}

/** One consumer the provider must serve: its bound key, its grant and the fingerprint of what it asks. */
export type Want = {
  /** Its key in `<provider>_bound`. */
  key: string;
  /** `<node>/<module>[/<local>]`, for logs. */
  label: string;
  /** What the adapter is handed. */
  grant: Grant;
  /** The request its bound entry answers (`for`, DESIGN §3), when the file gives the consumer's provision entry. */
  answers?: string;
  /** A hash of the credential, the values and the request: a different one means create must run again. */
  fingerprint: string;
};

/** What the entries ask of `provision`, by bound key. */
export function wantsOf(entries: ConsumerEntry[], provision: string): Map<string, Want> {
  const wants = new Map<string, Want>();
  for (const e of entries) {
    const consumer = { node: e.consumer, module: e.module, local: e.local };
    const key = boundKey(e.consumer, e.module, provision, e.local ?? undefined);
    const grant = { as: deriveLogin(consumer), credential: e.credential, values: e.value, consumer };
    const answers = e.provision ? requestDigest(e.provision) : undefined;
    const want: Want = { key, label: labelOf(e.consumer, e.module, e.local), grant, fingerprint: fingerprintOf(e.credential, e.value, answers) };
    wants.set(key, answers === undefined ? want : { ...want, answers });
  }
  return wants;
}

/** `<node>/<module>[/<local>]`. */
export function labelOf(node: string, module: string, local: string | null | undefined): string {
  return local === null || local === undefined ? `${node}/${module}` : `${node}/${module}/${local}`;
}

/**
 * A sha256 of the credential, the values (keys sorted, so a reordered file is not a change) and the
 * request answered (a new request — a consumer's build asking it again — is answered anew even when
 * its values are the same), kept in memory only.
 */
function fingerprintOf(credential: string, values: Record<string, unknown>, answers: string | undefined): string {
  return createHash('sha256')
    .update(canonicalJson([credential, values, answers ?? null]))
    .digest('hex');
}

/** A watch of one file; close ends it. */
export type FileWatch = { close(): void };

/**
 * Watches `path` through its directory (a rename replaces the file's inode, which a watch of the
 * file itself would lose). `onChange` may run several times for one write; `onError` hears a
 * watch that broke (its directory went). Throws when the directory cannot be watched.
 */
export function watchFile(path: string, onChange: () => void, onError: (err: Error) => void): FileWatch {
  const file = basename(path);
  const watcher = watch(dirname(path), { persistent: false }, (_event, changed) => {
    if (changed === null || changed.toString() === file) onChange();
  });
  watcher.on('error', onError);
  return { close: () => watcher.close() };
}
