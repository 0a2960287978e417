// A notice on `mesh-vault.changed` (DESIGN §3): `{name}`, never a value. Anyone allowed to publish
// there can send anything, so a notice is read within the limits of §3 before its name is looked at,
// and one out of shape is said and ignored: it never crashes the client nor makes it ask the vault.
import * as v from 'valibot';
import type { Logger } from '../../shared/cli/log.ts';
import type { Parsed } from '../../shared/base/result.ts';
import { decodeJson } from '../../shared/contract/decode.ts';
import { VAULT_CHANGED } from '../../shared/contract/subjects.ts';

/** The largest notice read, in bytes: its one name is a few hundred at most. */
export const MAX_VAULT_NOTICE_BYTES = 4096;
/** The deepest nesting a notice may have: `{name}` is one level; a little room for fields a vault adds. */
export const MAX_VAULT_NOTICE_DEPTH = 4;
/** The longest vault name, in characters: `pair/` and five names of §2 at their longest, separators included. */
export const MAX_VAULT_NAME_CHARS = 5 + 63 + 1 + 128 + 1 + 63 + 1 + 63 + 1 + 128;

// DESIGN §2: a node, module or provider name; a secret name, provision or local.
const NAME = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const WORD = '[A-Za-z0-9][A-Za-z0-9_-]{0,127}';
/**
 * A vault name as DESIGN §4 builds one: `pair/<provider>/<provision>/<node>/<module>[/<local>]`, or
 * `module/<module>/<name>` (a module's own secret, which the engine reads and the client never asks
 * for: in shape, and of no credential the client holds).
 */
export const VAULT_NAME_PATTERN = new RegExp(`^(?:pair/${NAME}/${WORD}/${NAME}/${NAME}(?:/${WORD})?|module/${NAME}/${WORD})$`);

// An issue with a path is a missing entry; one without is the notice itself not being an object.
const notAnObject = (issue: v.BaseIssue<unknown>) => (issue.path?.length ? 'is missing' : 'is not an object');

/** A `mesh-vault.changed` notice; fields besides `name` are allowed and ignored. The first failed check is the reason. */
export const VaultNoticeSchema = v.config(
  v.object(
    {
      /** The vault name whose credential changed. */
      name: v.pipe(
        v.string('is not a string'),
        v.maxLength(MAX_VAULT_NAME_CHARS, `is longer than ${MAX_VAULT_NAME_CHARS} characters`),
        v.regex(VAULT_NAME_PATTERN, 'is not a vault name'),
      ),
    },
    notAnObject,
  ),
  { abortPipeEarly: true },
);

/** Reads a notice within the limits: the vault name it carries, or why it is out of shape (quoting none of it). */
export function parseVaultNotice(data: Uint8Array): Parsed<string> {
  const notice = decodeJson(VaultNoticeSchema, data, { maxBytes: MAX_VAULT_NOTICE_BYTES, maxDepth: MAX_VAULT_NOTICE_DEPTH });
  if (notice.ok) return { ok: true, value: notice.value.name };
  // JSON.parse's message quotes the text around the fault.
  return { ok: false, reason: notice.reason.startsWith('not JSON') ? 'not JSON' : notice.reason };
}

/**
 * Makes the reader of `mesh-vault.changed`: the name of a notice in shape goes to `onName`; the first
 * notice out of shape is said at warn, every later one at debug, so a flood does not flood the log.
 */
export function vaultNoticeReader(log: Logger, onName: (name: string) => void): (data: Uint8Array) => void {
  let refused = 0;
  return (data) => {
    const notice = parseVaultNotice(data);
    if (notice.ok) return onName(notice.value);
    refused++;
    const line = `${VAULT_CHANGED}: a notice out of shape ignored (${notice.reason})`;
    if (refused === 1) log.warn(`${line}; any more are said at debug`);
    else log.debug(`${line}; ${refused} so far`);
  };
}
