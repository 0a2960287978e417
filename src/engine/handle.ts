// One request line in, one reply out: size, depth, JSON and the schema checked first, so nothing malformed reaches the writer.
import { FillRequestSchema, type FillReply, type FillRequest, type FillResult } from '../shared/contract/fill-protocol.ts';
import { parseBoundedJson } from '../shared/contract/limits.ts';
import { validate } from '../shared/contract/decode.ts';
import { MAX_REQUEST_LINE_BYTES } from './socket.ts';
import { errorText } from '../shared/base/errors.ts';

/** Applies a valid request and returns each file's result. */
export type Applier = (req: FillRequest) => Promise<FillResult[]>;

/** Answers one request line; never throws: whatever goes wrong is `{id, ok: false, error}`. */
export async function handleLine(line: string, apply: Applier): Promise<FillReply> {
  const raw = parseBoundedJson(line, { maxBytes: MAX_REQUEST_LINE_BYTES });
  if (!raw.ok) return { id: null, ok: false, error: raw.reason };
  const id = requestId(raw.value);
  const req = validate(FillRequestSchema, raw.value);
  if (!req.ok) return { id, ok: false, error: req.reason };
  try {
    return { id: req.value.id, ok: true, files: await apply(req.value) };
  } catch (err) {
    return { id, ok: false, error: `apply failed: ${errorText(err)}` };
  }
}

// The id is echoed even when the rest is out of shape, so the client can match the error to its request.
function requestId(raw: unknown): number | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const id = (raw as { id?: unknown }).id;
  return typeof id === 'number' && Number.isFinite(id) ? id : null;
}
