// One request line in, one reply out: JSON and the schema checked first, so nothing malformed reaches the writer.
import { FillRequestSchema, type FillReply, type FillRequest, type FillResult } from '../shared/fill-protocol.ts';
import { validate } from '../shared/schemas.ts';

/** Applies a valid request and returns each file's result. */
export type Applier = (req: FillRequest) => Promise<FillResult[]>;

/** Answers one request line; never throws: whatever goes wrong is `{id, ok: false, error}`. */
export async function handleLine(line: string, apply: Applier): Promise<FillReply> {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (err) {
    return { id: null, ok: false, error: `not JSON: ${(err as Error).message}` };
  }
  const id = requestId(raw);
  const req = validate(FillRequestSchema, raw);
  if (!req.ok) return { id, ok: false, error: req.reason };
  try {
    return { id: req.value.id, ok: true, files: await apply(req.value) };
  } catch (err) {
    return { id, ok: false, error: `apply failed: ${(err as Error).message}` };
  }
}

// The id is echoed even when the rest is out of shape, so the client can match the error to its request.
function requestId(raw: unknown): number | null {
  if (typeof raw !== 'object' || raw === null) return null;
  const id = (raw as { id?: unknown }).id;
  return typeof id === 'number' && Number.isFinite(id) ? id : null;
}
