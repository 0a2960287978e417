// The fill socket protocol (DESIGN §9): one JSON request per line from the client, one reply line per request.
import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { NAME_PATTERN } from './keys.ts';
import type { Parsed } from '../base/result.ts';
import { parseBoundedJson } from './limits.ts';
import { CHANGES, FILE_MODES } from './composition.ts';
import { PLACEHOLDER_NAME_PATTERN } from './fields.ts';
import { validate } from './decode.ts';

/** The socket the engine listens on when neither --socket nor MESH_FILL_SOCKET says otherwise. */
export const DEFAULT_FILL_SOCKET = '/run/nox-mesh-host/fill.sock';
/** The permission bits of a file whose request gives no `fileMode`. */
export const DEFAULT_FILE_MODE = '0644';
/** The permission bits of a file holding a secret part whose request gives no `fileMode` (DESIGN §9). */
export const SECRET_FILE_MODE = '0600';
/** The comment leader of a `managed` file's BEGIN/END lines when the request gives none. */
export const DEFAULT_COMMENT = '#';
/** The operation that hands a module's files to the engine. */
export const FILL_OP = 'fill';
/** The operation that asks whether the engine is there (DESIGN §14). */
export const PING_OP = 'ping';
/** The `op` of the one line the engine sends unasked: a knock for one module (DESIGN §14). */
export const KNOCK_OP = 'knock';

/**
 * What the engine did with a file (DESIGN §9): `written`, `unchanged`, `kept` (a seed that exists),
 * `restored` (put back after something else changed it on disk), `left` (changed on disk too often
 * by something else: left as it is), `refused`.
 */
export const FILL_ACTIONS = ['written', 'unchanged', 'kept', 'restored', 'left', 'refused'] as const;
/** What the engine did with a file. */
export type FillAction = (typeof FILL_ACTIONS)[number];

/** How many changes on disk by something else, within DRIFT_WINDOW_MS, make the engine leave a file as it is (DESIGN §14). */
export const DRIFT_LIMIT = 5;
/** The window DRIFT_LIMIT counts in (DESIGN §14). */
export const DRIFT_WINDOW_MS = 60_000;
/** The reason of a `left` file, word for word as DESIGN §14 gives it. */
export const LEFT_REASON = 'changed on disk 5 times in 60 s by something else; left as it is until its content changes or the engine restarts';

const text = v.pipe(v.string(), v.minLength(1, 'is empty'));
/** A secret's name as a placeholder can hold it (DESIGN §8): no whitespace, `{`, `}` or `$`. */
export const SECRET_NAME_PATTERN = PLACEHOLDER_NAME_PATTERN;
const secretName = v.pipe(v.string(), v.regex(SECRET_NAME_PATTERN, 'is not a placeholder name'));

/** A part of a file's content that the engine fills with a secret's value. */
export const SecretPartSchema = v.strictObject({
  /** A name of the request's `secrets`. */
  secret: secretName,
});

/**
 * A file's content (DESIGN §9): text taken byte for byte, or, when the file names a secret, a list
 * of literal strings and secret parts. No text is ever scanned for placeholders.
 */
export const FillContentSchema = v.union([v.string(), v.array(v.union([v.string(), SecretPartSchema]))]);
/** A file's content: text, or literal strings and secret parts. */
export type FillContent = v.InferOutput<typeof FillContentSchema>;
const oneLine = v.pipe(text, v.regex(/^[^\n\r\0]*$/, 'holds a line break or NUL'));

/** One file of a fill request. */
export const FillFileSchema = v.strictObject({
  /** Where the file goes on the node; must lie inside the engine's root. */
  path: oneLine,
  /** The filled template: text, or text and secret parts for the engine to fill. */
  content: FillContentSchema,
  /** `sha256:<hex>` of the content with each secret part written `${secret:<name>}` (contentDigest). */
  digest: v.pipe(v.string(), v.regex(/^sha256:[0-9a-f]{64}$/, 'is not sha256:<64 hex>')),
  /** `owned` written whole, `seed` written only when absent, `managed` only the module's block. */
  mode: v.picklist(FILE_MODES, 'must be one of owned, seed, managed'),
  /** How the module's program takes a change of this file. */
  change: v.picklist(CHANGES, 'must be one of restart, reload, none'),
  /** The user that owns the file (applied when the engine runs as root). */
  owner: v.optional(oneLine),
  /** Permission bits as octal text, e.g. "0640"; DEFAULT_FILE_MODE when absent. */
  fileMode: v.optional(v.pipe(v.string(), v.regex(/^0?[0-7]{3}$/, 'is not an octal mode'))),
  /** The comment leader of a `managed` file's BEGIN/END lines; DEFAULT_COMMENT when absent. */
  comment: v.optional(oneLine),
});
/** One file of a fill request. */
export type FillFile = v.InferOutput<typeof FillFileSchema>;

/** A fill request: one module's changed files, applied together so its program changes once. */
export const FillRequestSchema = v.strictObject({
  /** Chosen by the client; the reply carries it back. */
  id: v.pipe(v.number(), v.integer('is not an integer'), v.minValue(0, 'is negative')),
  /** Always "fill" (a ping is read by PingRequestSchema before). */
  op: v.literal(FILL_OP, 'must be "fill" or "ping"'),
  /** The module the files belong to; names its managed blocks and its journal lines. */
  module: v.pipe(v.string(), v.regex(NAME_PATTERN, 'is not a valid name')),
  /** The module's build the files were filled from. */
  build: text,
  /** The files, applied in this order. */
  files: v.array(FillFileSchema),
  /** Secret name (as in a secret part) → vault name. */
  secrets: v.optional(v.record(secretName, text)),
});
/** A fill request. */
export type FillRequest = v.InferOutput<typeof FillRequestSchema>;

/** What the engine did with one file. */
export const FillResultSchema = v.object({
  /** The file's path exactly as the request gave it. */
  path: v.string(),
  /** One of FILL_ACTIONS. */
  action: v.picklist(FILL_ACTIONS),
  /** Why a file was refused or left. */
  reason: v.optional(v.string()),
});
/** What the engine did with one file. */
export type FillResult = v.InferOutput<typeof FillResultSchema>;

/** A reply: every file's result in request order, or why the whole request was not applied. */
export const FillReplySchema = v.variant('ok', [
  v.object({ id: v.number(), ok: v.literal(true), files: v.array(FillResultSchema) }),
  /** `id` is null when the request line did not yield one (not JSON, or no numeric id). */
  v.object({ id: v.nullable(v.number()), ok: v.literal(false), error: v.string() }),
]);
/** A reply of the engine. */
export type FillReply = v.InferOutput<typeof FillReplySchema>;

/** The content as the digest reads it: each secret part written `${secret:<name>}`. */
export function contentText(content: FillContent): string {
  if (typeof content === 'string') return content;
  return content.map((part) => (typeof part === 'string' ? part : `\${secret:${part.secret}}`)).join('');
}

/** The `digest` of a file's content: `sha256:<hex>` of its UTF-8 bytes, secret parts as `${secret:<name>}`. */
export function contentDigest(content: FillContent): string {
  const hash = createHash('sha256');
  if (typeof content === 'string') hash.update(content, 'utf8');
  else for (const part of content) hash.update(typeof part === 'string' ? part : `\${secret:${part.secret}}`, 'utf8');
  return 'sha256:' + hash.digest('hex');
}

/** The secret names a content's parts name, each once, in order. */
export function secretNamesOf(content: FillContent): string[] {
  if (typeof content === 'string') return [];
  return [...new Set(content.flatMap((part) => (typeof part === 'string' ? [] : [part.secret])))];
}

/** How many paths a reason lists before it says "and N more". */
const LISTED_PATHS = 5;
/** How much of a path the engine made up a reason quotes. */
const QUOTED_PATH_CHARS = 200;

/**
 * Checks an `ok:true` reply against the paths of the request it answers (DESIGN §9): it may name
 * only paths sent, each at most as often as it was sent; `ok:false` is left as it is. A path it
 * leaves out is no protocol error (unconfirmedPaths says which; that module waits). The reason
 * names the path the engine was not sent, or sent fewer times.
 */
export function confirmReply(reply: FillReply, sent: readonly string[]): Parsed<FillReply> {
  if (!reply.ok) return { ok: true, value: reply };
  const owed = countPaths(sent);
  for (const { path } of reply.files) {
    const left = owed.get(path);
    if (left === undefined) return { ok: false, reason: `engine replied for ${quotePath(path)}, which it was not sent` };
    if (left === 0) return { ok: false, reason: `engine named ${path} more often than it was sent` };
    owed.set(path, left - 1);
  }
  return { ok: true, value: reply };
}

/** The paths sent that a reply passed by confirmReply leaves out, in the order sent (none for `ok:false`). */
export function unconfirmedPaths(reply: FillReply, sent: readonly string[]): string[] {
  if (!reply.ok) return [];
  const named = countPaths(reply.files.map((f) => f.path));
  const out: string[] = [];
  for (const path of sent) {
    const left = named.get(path) ?? 0;
    if (left > 0) named.set(path, left - 1);
    else out.push(path);
  }
  return out;
}

/** Says which files the engine did not confirm, the first LISTED_PATHS by path and the rest by count. */
export function unconfirmedReason(paths: readonly string[]): string {
  const more = paths.length > LISTED_PATHS ? ` and ${paths.length - LISTED_PATHS} more` : '';
  return `engine did not confirm ${paths.slice(0, LISTED_PATHS).join(', ')}${more}`;
}

function countPaths(paths: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const path of paths) counts.set(path, (counts.get(path) ?? 0) + 1);
  return counts;
}

/** What one reply line means for the requests in flight. */
export type ReplyVerdict =
  /** Out of shape, or for no request in flight: said and ignored. */
  | { kind: 'ignored'; why: string }
  /** The reply of request `id`: naming only what was sent, each at most as often (or `ok:false`). */
  | { kind: 'resolved'; id: number; reply: FillReply }
  /** A reply for request `id` that breaks §9: out of shape, or naming a file it was not sent. */
  | { kind: 'broken'; id: number; reason: string };

/**
 * Reads one reply line against the paths of each request in flight (`inFlight(id)`, undefined when
 * none has that id), within `maxBytes`: a line out of shape or for no request in flight is ignored;
 * a reply for a request in flight resolves it when confirmReply passes it (a file left out is the
 * caller's to wait on), and breaks it otherwise. Never throws.
 */
export function judgeReplyLine(line: Uint8Array | string, inFlight: (id: number) => readonly string[] | undefined, maxBytes: number): ReplyVerdict {
  const raw = parseBoundedJson(line, { maxBytes });
  if (!raw.ok) return { kind: 'ignored', why: `reply out of shape: ${raw.reason}` };
  const id = typeof raw.value === 'object' && raw.value !== null ? (raw.value as { id?: unknown }).id : undefined;
  const paths = typeof id === 'number' ? inFlight(id) : undefined;
  if (typeof id !== 'number' || paths === undefined) return { kind: 'ignored', why: 'reply for no request in flight' };
  const reply = validate(FillReplySchema, raw.value);
  if (!reply.ok) return { kind: 'broken', id, reason: `engine replied out of shape: ${reply.reason}` };
  const confirmed = confirmReply(reply.value, paths);
  return confirmed.ok ? { kind: 'resolved', id, reply: confirmed.value } : { kind: 'broken', id, reason: confirmed.reason };
}

// A path the engine made up is untrusted text: quoted, cut short, so a reason stays one short line.
function quotePath(path: string): string {
  return JSON.stringify(path.length > QUOTED_PATH_CHARS ? `${path.slice(0, QUOTED_PATH_CHARS)}…` : path);
}
