// Which reply subjects a request handler may answer (DESIGN §11): an inbox, never a subject the asker chose.
import { NAME_PATTERN } from './keys.ts';
import { MAX_SUBJECT_BYTES } from './limits.ts';

/** The inbox prefix nats.js gives a connection that names none. */
export const DEFAULT_INBOX_PREFIX = '_INBOX';
/** The first token of a node client's inboxes is this followed by the node's name. */
export const NODE_INBOX_PREFIX = '_INBOX_';
/** The seat's inbox prefix: its user may subscribe only `_INBOX_provisioner.>` (DESIGN §11). */
export const SEAT_INBOX_PREFIX = '_INBOX_provisioner';
/** The first token of a reply subject nats-server maps across an account's service import. */
export const MAPPED_REPLY_PREFIX = '_R_';

// A token of a subject one may publish to: not empty, no wildcard, no whitespace.
const TOKEN = /^[^\s.*>]+$/;

/**
 * Whether `subject` is an inbox a handler may answer: `_INBOX.…`, `_INBOX_<node>.…` (node a valid
 * name) or a mapped service reply `_R_.…`, every token publishable, within MAX_SUBJECT_BYTES.
 * Anything else (`$JS.…`, `$KV.…`, `$O.…`, a plain subject) would be a write with the handler's
 * rights to a subject the asker chose.
 */
export function isInboxSubject(subject: string): boolean {
  if (subject.length > MAX_SUBJECT_BYTES || Buffer.byteLength(subject) > MAX_SUBJECT_BYTES) return false;
  const tokens = subject.split('.');
  if (tokens.length < 2 || !tokens.every((token) => TOKEN.test(token))) return false;
  const head = tokens[0]!;
  if (head === DEFAULT_INBOX_PREFIX || head === MAPPED_REPLY_PREFIX) return true;
  return head.startsWith(NODE_INBOX_PREFIX) && NAME_PATTERN.test(head.slice(NODE_INBOX_PREFIX.length));
}
