// The verb's `what: "health"` (DESIGN §6) and `alive` (§14): answered from the seat's memory, in the same envelope and
// paging as a bucket's entries — keys in order, `after` and `limit`, `next` when more remain.
import { firstAfter } from './key-index.ts';
import type { VerbReply, VerbRequest } from '../../shared/contract/verb.ts';
import { Page, REPLY_HEADROOM } from './page.ts';

/** What the seat knows to answer `health` from: its keys in key order, and each key's entry. */
export type HealthSource = {
  /** Every key with an entry, in key order. */
  keys(): readonly string[];
  /** The entry of a key, naming its module and, unless it is a rollout's (keyed `<module>`), its node; a node's own (keyed `<node>`, DESIGN §14) names no module. */
  entry(key: string): ({ node?: string; module?: string } & Record<string, unknown>) | undefined;
};

/**
 * One page of health entries past `after`, narrowed by `node` and `module` when given. Read at once
 * from memory, so a page is one consistent moment of the seat's passes.
 */
export function answerHealth(source: HealthSource, request: VerbRequest, maxPayload: number): VerbReply {
  const page = new Page(request.what, request.limit ?? Infinity, maxPayload - REPLY_HEADROOM);
  const keys = source.keys();
  for (let i = firstAfter(keys, request.after); i < keys.length; i++) {
    const key = keys[i]!;
    const entry = source.entry(key);
    if (!entry) continue;
    if ((request.node !== undefined && entry.node !== request.node) || (request.module !== undefined && entry.module !== request.module)) continue;
    if (!page.add({ key, value: entry })) break;
  }
  return page.reply;
}
