// One request line in, one reply out: size, depth, JSON and the schema checked first, so nothing malformed reaches the writer.
import { FillRequestSchema, PING_OP, type FillReply, type FillRequest, type FillResult } from '../shared/contract/fill-protocol.ts';
import { PingRequestSchema, type PingReply } from '../shared/contract/fill-ping-knock.ts';
import { parseBoundedJson } from '../shared/contract/limits.ts';
import { validate } from '../shared/contract/decode.ts';
import { MAX_REQUEST_LINE_BYTES } from './socket.ts';
import { errorText } from '../shared/base/errors.ts';

/** Applies a valid request and returns each file's result. */
export type Applier = (req: FillRequest) => Promise<FillResult[]>;

/** What a request line asks, read before its turn: a fill to apply in turn, or a reply to give at once (a ping's, or an error's). */
export type ReadLine = { kind: 'fill'; req: FillRequest } | { kind: 'answered'; reply: FillReply | PingReply };

/**
 * Reads one request line: a ping is answered `{id, ok: true}` at once (it touches nothing, so it
 * waits for no other request: an engine busy with a long fill is still there); a line out of shape
 * is answered `{id, ok: false, error}`; a valid fill is handed back to be applied in its turn.
 */
export function readLine(line: string): ReadLine {
  const raw = parseBoundedJson(line, { maxBytes: MAX_REQUEST_LINE_BYTES });
  if (!raw.ok) return { kind: 'answered', reply: { id: null, ok: false, error: raw.reason } };
  const id = requestId(raw.value);
  if (opOf(raw.value) === PING_OP) {
    const ping = validate(PingRequestSchema, raw.value);
    return { kind: 'answered', reply: ping.ok ? { id: ping.value.id, ok: true } : { id, ok: false, error: ping.reason } };
  }
  const req = validate(FillRequestSchema, raw.value);
  if (!req.ok) return { kind: 'answered', reply: { id, ok: false, error: req.reason } };
  return { kind: 'fill', req: req.value };
}

/** Applies a valid fill request; never throws: an applier that fails is `{id, ok: false, error}`. */
export async function applyRequest(req: FillRequest, apply: Applier): Promise<FillReply> {
  try {
    return { id: req.id, ok: true, files: await apply(req) };
  } catch (err) {
    return { id: req.id, ok: false, error: `apply failed: ${errorText(err)}` };
  }
}

/** Answers one request line (readLine, then applyRequest); never throws. */
export async function handleLine(line: string, apply: Applier): Promise<FillReply | PingReply> {
  const read = readLine(line);
  return read.kind === 'answered' ? read.reply : applyRequest(read.req, apply);
}

// The id is echoed even when the rest is out of shape, so the client can match the error to its request.
function requestId(raw: unknown): number | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const id = (raw as { id?: unknown }).id;
  return typeof id === 'number' && Number.isFinite(id) ? id : null;
}

function opOf(raw: unknown): unknown {
  return typeof raw === 'object' && raw !== null ? (raw as { op?: unknown }).op : undefined;
}
