// Each node's last word as `status` shows it (DESIGN §14): the verb's `alive`, read page by page —
// the client's version, how long ago the seat heard it, and `silent` or `engine down` in place of the
// module states the seat cannot vouch for. Checked again here: `status` shows what it read.
import * as v from 'valibot';
import { forEachPage, type QueryFailure } from '../query/command.ts';
import { validate } from '../../../shared/contract/decode.ts';

/** An entry of the verb's `alive` (contract/alive.ts `AliveEntry`), the fields `status` reads. */
const AliveEntrySchema = v.object({
  node: v.string(),
  version: v.optional(v.string()),
  every: v.optional(v.number()),
  engine: v.optional(v.object({ state: v.string(), since: v.string() })),
  heard: v.optional(v.string()),
  reason: v.optional(v.string()),
});

/** What a node is when the seat cannot vouch for its modules. */
export type Liveness = 'silent' | 'engine down';

/** A node's last word as `status` shows it; every field absent when the seat has heard nothing of it. */
export type NodeWord = {
  /** The client's version, from its last alive message. */
  version?: string;
  /** When the seat heard its last word (ISO). */
  lastWord?: string;
  /** How long ago that was, in whole seconds. */
  lastWordSeconds?: number;
  /** The client's period, in seconds. */
  every?: number;
  /** Present while the node is silent or its engine is down. */
  liveness?: Liveness;
  /** The seat's reason (`no word from its client for 75 s`, `engine down since …`). */
  livenessReason?: string;
};

/**
 * Reads the seat's `alive` (narrowed to `node` when given) into a word per node with a plan; keys
 * out of shape go to `outOfShape`. A seat that does not keep `alive` (an older one) gives none.
 */
export async function readWords(
  nc: Parameters<typeof forEachPage>[0],
  request: { node?: string; limit: number },
  now: number,
  outOfShape: (key: string, reason: string) => void,
): Promise<Map<string, NodeWord> | QueryFailure> {
  const words = new Map<string, NodeWord>();
  const failed = await forEachPage(nc, { what: 'alive', ...request }, (page) => {
    for (const { key, value } of page.entries) {
      const read = validate(AliveEntrySchema, value);
      if (!read.ok) outOfShape(key, `value: ${read.reason}`);
      else if (read.value.node !== key) outOfShape(key, `value: node ${JSON.stringify(read.value.node)} is not the key's`);
      else words.set(key, wordOf(read.value, now));
    }
    for (const { key, reason } of page.outOfShape) outOfShape(key, reason);
  });
  if (failed && /what: .*must be one of/.test(failed.message)) return words;
  return failed ?? words;
}

/** Whole seconds from `at` to `now` (0 for a time ahead or one that does not parse), as summary.ts counts a report's age. */
function secondsSince(at: string, now: number): number {
  const then = Date.parse(at);
  return Number.isNaN(then) ? 0 : Math.max(0, Math.floor((now - then) / 1000));
}

function wordOf(entry: v.InferOutput<typeof AliveEntrySchema>, now: number): NodeWord {
  return {
    ...(entry.version === undefined ? {} : { version: entry.version }),
    ...(entry.heard === undefined ? {} : { lastWord: entry.heard, lastWordSeconds: secondsSince(entry.heard, now) }),
    ...(entry.every === undefined ? {} : { every: entry.every }),
    ...(entry.reason === undefined ? {} : { liveness: entry.reason.startsWith('engine down') ? 'engine down' : 'silent', livenessReason: entry.reason }),
  };
}
