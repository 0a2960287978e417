// The fill socket's two lines beside a fill (DESIGN §9, §14): the ping and its reply, and the knock
// line, the one line an engine sends unasked.
import * as v from 'valibot';
import { KNOCK_OP, PING_OP } from './fill-protocol.ts';
import { NAME_PATTERN } from './keys.ts';

/** A ping (DESIGN §14): `{"id":8,"op":"ping"}`, answered `{"id":8,"ok":true}`. */
export const PingRequestSchema = v.strictObject({
  /** Chosen by the client; the reply carries it back. */
  id: v.pipe(v.number(), v.integer('is not an integer'), v.minValue(0, 'is negative')),
  /** Always "ping". */
  op: v.literal(PING_OP),
});
/** A ping. */
export type PingRequest = v.InferOutput<typeof PingRequestSchema>;

/**
 * The reply to a ping: `{id, ok: true}`, or, from an engine that does not know the op, an error
 * reply. Either means the engine is up (DESIGN §14).
 */
export const PingReplySchema = v.variant('ok', [
  v.object({ id: v.number(), ok: v.literal(true) }),
  v.object({ id: v.nullable(v.number()), ok: v.literal(false), error: v.string() }),
]);
/** The reply to a ping. */
export type PingReply = v.InferOutput<typeof PingReplySchema>;

/**
 * The one line an engine sends unasked (DESIGN §9, §14): a file of `module` changed on disk, so its
 * client sends every file of that module again. It carries no `id`.
 */
export const KnockLineSchema = v.strictObject({
  /** Always "knock". */
  op: v.literal(KNOCK_OP),
  /** The module whose files are to be sent again. */
  module: v.pipe(v.string(), v.regex(NAME_PATTERN, 'is not a valid name')),
});
/** A knock line. */
export type KnockLine = v.InferOutput<typeof KnockLineSchema>;

/** The knock line for a module, newline included, as the engine writes it. */
export function knockLine(module: string): string {
  return JSON.stringify({ op: KNOCK_OP, module } satisfies KnockLine) + '\n';
}

/**
 * The module a parsed line knocks for, or undefined when it is no knock line: what a client reads
 * before it takes a line for a reply (a line that is neither is a protocol error, DESIGN §9).
 */
export function knockedModule(raw: unknown): string | undefined {
  const knock = v.safeParse(KnockLineSchema, raw);
  return knock.success ? knock.output.module : undefined;
}
