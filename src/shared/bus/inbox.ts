// Inbox prefixes by role (DESIGN §11) and which reply subjects a request handler may answer: an
// inbox, never a subject the asker chose.
import { NAME_PATTERN } from '../contract/keys.ts';
import { MAX_SUBJECT_BYTES } from '../contract/limits.ts';

/** The inbox prefix nats.js gives a connection that names none. */
export const DEFAULT_INBOX_PREFIX = '_INBOX';
/** The first token of a reply subject nats-server maps across an account's service import. */
export const MAPPED_REPLY_PREFIX = '_R_';

/**
 * The inbox prefix of each login, qualified by its role: a name holds no `_` (DESIGN §2), so no
 * node, runner or provider name can make two prefixes equal, nor equal a fixed one.
 */
export const INBOX_PREFIXES = {
  /** The seat, and `query`/`status` run with its login. */
  seat: '_INBOX_seat',
  /** The admin login: `init` and the input commands. */
  admin: '_INBOX_admin',
  /** The vault. */
  vault: '_INBOX_vault',
  /** A node's client. */
  node: (node: string) => `_INBOX_node_${node}`,
  /** A node's tool runner (the SDK's `ask`/`watch`). */
  runner: (node: string) => `_INBOX_runner_${node}`,
  /** A provider module (the SDK's provider helper). */
  provider: (provider: string) => `_INBOX_provider_${provider}`,
} as const;

const FIXED_HEADS = new Set([DEFAULT_INBOX_PREFIX, MAPPED_REPLY_PREFIX, INBOX_PREFIXES.seat, INBOX_PREFIXES.admin, INBOX_PREFIXES.vault]);
const NAMED_HEAD = /^_INBOX_(node|runner|provider)_(.+)$/;
// A token of a subject one may publish to: not empty, no wildcard, no whitespace.
const TOKEN = /^[^\s.*>]+$/;

/**
 * Whether `subject` is an inbox a handler may answer: `_INBOX.…`, a role's `_INBOX_<role>….…` (a
 * named role's name valid), or a mapped service reply `_R_.…`, every token publishable, within
 * MAX_SUBJECT_BYTES. Anything else (`$JS.…`, `$KV.…`, `$O.…`, a plain subject) would be a write
 * with the handler's rights to a subject the asker chose.
 */
export function isInboxSubject(subject: string): boolean {
  if (subject.length > MAX_SUBJECT_BYTES || Buffer.byteLength(subject) > MAX_SUBJECT_BYTES) return false;
  const tokens = subject.split('.');
  if (tokens.length < 2 || !tokens.every((token) => TOKEN.test(token))) return false;
  const head = tokens[0]!;
  if (FIXED_HEADS.has(head)) return true;
  const named = NAMED_HEAD.exec(head);
  return named !== null && NAME_PATTERN.test(named[2]!);
}
