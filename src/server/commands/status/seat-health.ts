// The verb's `health` as `status` reads it (DESIGN §6): an entry per assignment whose plan the seat
// holds (composition missing or unpublished) or cannot compose. Checked again here, as reports
// are: `status` shows what it read, and does not rely on the seat having checked it.
import * as v from 'valibot';
import { keyDisagreement, parseNodeModuleKey } from '../../../shared/contract/keys.ts';
import type { Parsed } from '../../../shared/base/result.ts';
import { validate } from '../../../shared/contract/decode.ts';

/** An entry of the verb's `health` for an assignment (server/seat/health-book.ts `HealthEntry`). */
const SeatEntrySchema = v.object({
  node: v.string(),
  module: v.string(),
  build: v.optional(v.string()),
  state: v.picklist(['held', 'failed']),
  reason: v.string(),
  since: v.string(),
  passes: v.number(),
});

/** What the seat says of one assignment: held (waiting for a composition) or failed (it cannot compose the plan). */
export type SeatEntry = v.InferOutput<typeof SeatEntrySchema>;

/**
 * An entry of `health` checked under its key; undefined for a rollout's entry (keyed `<module>`,
 * DESIGN §12), which `status` leaves to `rollout`.
 */
export function readSeatEntry(key: string, value: unknown): Parsed<SeatEntry> | undefined {
  if (!key.includes('.')) return undefined;
  const id = parseNodeModuleKey(key);
  if (!id.ok) return { ok: false, reason: `key: ${id.reason}` };
  const read = validate(SeatEntrySchema, value);
  if (!read.ok) return { ok: false, reason: `value: ${read.reason}` };
  const disagreement = keyDisagreement(id.value, read.value);
  return disagreement === undefined ? read : { ok: false, reason: `value: ${disagreement}` };
}
