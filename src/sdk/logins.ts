// The login a provider creates for a consumer (DESIGN §1): derived from who the consumer is alone,
// so it is the same after every restart and on every host, and safe as an SQL identifier.
import { createHash } from 'node:crypto';

/** Longest login, in bytes: PostgreSQL's identifier limit (NAMEDATALEN − 1), the tightest served. */
export const MAX_LOGIN_BYTES = 63;

/** Hex digits of the identity's hash appended to a login whose readable form is not exact. */
const HASH_DIGITS = 12;
/** Put before a readable form that does not start with a letter or spells a reserved prefix. */
const LETTER_PREFIX = 'u_';
/** A part that stands for itself in the readable form; any other makes the mapping lossy. */
const PLAIN_PART = /^[a-z0-9]+$/;
/**
 * Role names a SQL server refuses or reads as something else even quoted (PostgreSQL reserves
 * `pg_…`; these keywords name the session's own role). Each holds `_`, as a readable form does.
 */
const RESERVED = new Set([
  'current_user',
  'session_user',
  'current_role',
  'system_user',
  'current_catalog',
  'current_schema',
  'current_date',
  'current_time',
  'current_timestamp',
]);

/** Who a consumer is: its node, its module and its local name for the binding (null when none). */
export type ConsumerIdentity = { node: string; module: string; local: string | null };

/**
 * The login for a consumer: `<module>_<node>[_<local>]` when that form is exact — every part
 * `[a-z0-9]+`, a letter first, nothing reserved, at most MAX_LOGIN_BYTES — and otherwise that form
 * with every other character mapped to `_`, cut to fit, and `__` plus a hash of the exact identity
 * appended. An exact form never holds `__`, so the two shapes cannot meet.
 */
export function deriveLogin(id: ConsumerIdentity): string {
  const parts = id.local === null ? [id.module, id.node] : [id.module, id.node, id.local];
  const readable = parts.join('_');
  if (parts.every((p) => PLAIN_PART.test(p)) && isSafeStart(readable) && readable.length <= MAX_LOGIN_BYTES) return readable;
  let mapped = readable.toLowerCase().replace(/[^a-z0-9]/g, '_');
  if (!isSafeStart(mapped)) mapped = LETTER_PREFIX + mapped;
  const hash = createHash('sha256')
    .update(JSON.stringify([id.node, id.module, id.local]))
    .digest('hex')
    .slice(0, HASH_DIGITS);
  return `${mapped.slice(0, MAX_LOGIN_BYTES - HASH_DIGITS - 2)}__${hash}`;
}

/** Whether a form starts with a letter and is neither a reserved name nor under a reserved prefix. */
function isSafeStart(form: string): boolean {
  return /^[a-z]/.test(form) && !form.startsWith('pg_') && !RESERVED.has(form);
}
