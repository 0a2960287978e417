// The fill socket protocol (DESIGN §9): one JSON request per line from the client, one reply line per request.
import { createHash } from 'node:crypto';
import * as v from 'valibot';
import { NAME_PATTERN } from './keys.ts';
import { CHANGES, FILE_ACTIONS, FILE_MODES } from './schemas.ts';

/** The socket the engine listens on when neither --socket nor MESH_FILL_SOCKET says otherwise. */
export const DEFAULT_FILL_SOCKET = '/run/nox-mesh-host/fill.sock';
/** The permission bits of a file whose request gives no `fileMode`. */
export const DEFAULT_FILE_MODE = '0644';
/** The comment leader of a `managed` file's BEGIN/END lines when the request gives none. */
export const DEFAULT_COMMENT = '#';
/** The only operation of the protocol. */
export const FILL_OP = 'fill';

const text = v.pipe(v.string(), v.minLength(1, 'is empty'));
const oneLine = v.pipe(text, v.regex(/^[^\n\r\0]*$/, 'holds a line break or NUL'));

/** One file of a fill request. */
export const FillFileSchema = v.strictObject({
  /** Where the file goes on the node; must lie inside the engine's root. */
  path: oneLine,
  /** The filled template; every `${secret:<name>}` is left for the engine to fill. */
  content: v.string(),
  /** `sha256:<hex>` of `content` as sent (before the engine fills secrets). */
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
  /** Always "fill". */
  op: v.literal(FILL_OP, 'must be "fill"'),
  /** The module the files belong to; names its managed blocks and its journal lines. */
  module: v.pipe(v.string(), v.regex(NAME_PATTERN, 'is not a valid name')),
  /** The module's build the files were filled from. */
  build: text,
  /** The files, applied in this order. */
  files: v.array(FillFileSchema),
  /** Secret name (as in `${secret:<name>}`) → vault name. */
  secrets: v.optional(v.record(text, text)),
});
/** A fill request. */
export type FillRequest = v.InferOutput<typeof FillRequestSchema>;

/** What the engine did with one file. */
export const FillResultSchema = v.object({
  /** The file's path exactly as the request gave it. */
  path: v.string(),
  /** `written`, `unchanged`, `kept` (an existing seed) or `refused`. */
  action: v.picklist(FILE_ACTIONS),
  /** Why a file was refused. */
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

/** The `digest` of a file's content: `sha256:<hex>` of its UTF-8 bytes. */
export function contentDigest(content: string): string {
  return 'sha256:' + createHash('sha256').update(content, 'utf8').digest('hex');
}
