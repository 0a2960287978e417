// `vault.js rotate NAME` (DESIGN §13): a new value in the store, then `mesh-vault.changed {name}`
// (never the value). A provision's credential is made anew (random); a module's secret is the
// operator's, so its new value is read from stdin — never from argv, where `ps` and the shell's
// history would show it.
import type { NatsConnection, Status } from '@nats-io/transport-node';
import { jsonBytes } from '../shared/base/bytes.ts';
import { errorText, isPermissionViolation } from '../shared/base/errors.ts';
import { fail, ok, type Parsed } from '../shared/base/result.ts';
import { VAULT_CHANGED } from '../shared/contract/subjects.ts';
import { parseVaultName } from '../shared/contract/vault-names.ts';
import { newCredential, type VaultStore } from './store.ts';

/** The most bytes a module's secret read from stdin may hold. */
export const MAX_SECRET_BYTES = 64 * 1024;

/** Reads a stream to its end, refusing one past MAX_SECRET_BYTES. */
export async function readSecretFrom(stream: AsyncIterable<Buffer | string>): Promise<Parsed<string>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += bytes.length;
    if (size > MAX_SECRET_BYTES) return fail(`the value on stdin is past ${MAX_SECRET_BYTES} bytes`);
    chunks.push(bytes);
  }
  return ok(Buffer.concat(chunks).toString('utf8'));
}

/**
 * The new value of `name`: a provision's credential is made here; a module's secret is what
 * `stdin()` gives, one trailing newline dropped (what `echo` adds), and refused when empty.
 */
export async function rotationValue(name: string, stdin: () => Promise<Parsed<string>>): Promise<Parsed<string>> {
  const parsed = parseVaultName(name);
  if (!parsed.ok) return fail(`${JSON.stringify(name.slice(0, 300))}: vault name ${parsed.reason}`);
  if (parsed.value.kind === 'pair') return ok(newCredential());
  const read = await stdin();
  if (!read.ok) return read;
  const value = read.value.replace(/\r?\n$/, '');
  return value === '' ? fail(`${name} is a module's secret: give its new value on stdin (nothing was given)`) : ok(value);
}

/** Writes `value` as `name` and says so on `mesh-vault.changed`; the reason says which step failed. */
export async function rotate(nc: NatsConnection, store: VaultStore, name: string, value: string): Promise<Parsed<void>> {
  const written = await store.put(name, value);
  if (!written.ok) return written;
  const unsaid = (why: string) => fail(`${name} was written, but ${VAULT_CHANGED} could not be said (${why}): run rotate again once it can be`);
  // A publish the login may not make is refused after the fact, on the connection's status: watched
  // from before the publish until the flush's round trip, which the server answers after its refusal.
  const refusals: string[] = [];
  // nats.js's status iterator has a stop(), which ends the loop below (AsyncIterable does not say so).
  const statuses = nc.status() as AsyncIterable<Status> & { stop?(): void };
  const watching = (async () => {
    for await (const status of statuses) if (status.type === 'error' && isPermissionViolation(status.error)) refusals.push(errorText(status.error));
  })();
  try {
    nc.publish(VAULT_CHANGED, jsonBytes({ name }));
    await nc.flush();
    await new Promise((resolve) => setImmediate(resolve));
  } catch (err) {
    return unsaid(errorText(err));
  } finally {
    statuses.stop?.();
    await watching.catch(() => {});
  }
  return refusals.length > 0 ? unsaid(refusals[0]!) : ok(undefined);
}
