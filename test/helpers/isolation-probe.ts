// How the isolation matrix judges an action: by its effect on the bus as `admin` sees it (a key's
// bytes and revision before and after, a value read back, a message received or not), and says why
// a refused one failed in words that are the same on every run.
import { Empty, errors, type NatsConnection } from '@nats-io/transport-node';
import { sameBytes } from '../../src/shared/base/bytes.ts';
import { sleep } from './wait.ts';

/** What came of an action: it took effect, the bus did not carry it out, or a handler dropped it. */
export type Verdict = 'allowed' | 'refused' | 'ignored';

/** A verdict and its evidence, without a port, a seed, a name or a time in it. */
export type Observed = { verdict: Verdict; how: string };

/** How long a probe's request waits for an answer. */
export const PROBE_TIMEOUT_MS = 1000;
/** How long a write the bus might still carry out is given before its target is read again. */
export const SETTLE_MS = 250;

/** A key's stored bytes and revision, or null when it has none. */
export type Stored = { data: Uint8Array; revision: number } | null;

/** The key as stored now, read by a direct get (as admin: every key). */
export async function stored(admin: NatsConnection, bucket: string, key: string): Promise<Stored> {
  const msg = await admin.request(`$JS.API.DIRECT.GET.KV_${bucket}.$KV.${bucket}.${key}`, Empty, { timeout: PROBE_TIMEOUT_MS });
  if (msg.headers?.code === 404) return null;
  if (msg.headers?.code) throw new Error(`direct get ${bucket} ${key}: ${msg.headers.code} ${msg.headers.description}`);
  return { data: msg.data, revision: Number(msg.headers?.get('Nats-Sequence')) };
}

/** Whether two reads of a key found the same bytes at the same revision. */
export function sameStored(a: Stored, b: Stored): boolean {
  return a === null || b === null ? a === b : a.revision === b.revision && sameBytes(a.data, b.data);
}

/** Why a call failed, in the few words the matrix prints. */
export function refusal(err: unknown): string {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof errors.PermissionViolationError || /permissions violation/i.test(e.message)) return 'permissions violation';
    if (e instanceof errors.NoRespondersError || /no responders|503|jetstream is not enabled/i.test(e.message)) return 'no responders';
    if (e instanceof errors.TimeoutError || /timeout|timed out/i.test(e.message)) return 'no answer';
  }
  // A JetStream API error: its description names the rule, never a generated name.
  return (err instanceof Error ? err.message : String(err)).replace(/"[^"]*"/g, '"…"');
}

/** A JetStream API reply's error, when it is one. */
export function apiError(data: Uint8Array): string | undefined {
  try {
    const reply = JSON.parse(new TextDecoder().decode(data)) as { error?: { description?: string; err_code?: number } };
    return reply.error ? `JetStream: ${reply.error.description ?? `error ${reply.error.err_code}`}` : undefined;
  } catch {
    return undefined;
  }
}

/** Runs `fn` within `ms`: its value, or the refusal that stopped it. */
export async function attempt<T>(fn: () => Promise<T>, ms = PROBE_TIMEOUT_MS * 2): Promise<{ ok: true; value: T } | { ok: false; why: string }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const value = await Promise.race([fn(), new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new errors.TimeoutError()), ms)))]);
    return { ok: true, value };
  } catch (err) {
    return { ok: false, why: refusal(err) };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs an attack on `target` (`[bucket, key]` as admin reads it) by `actor`, and judges it by the
 * key alone: changed (a byte or its revision) is allowed, whatever the attack said. `said` is the
 * attack's own outcome (a refusal, or nothing for a plain publish).
 */
export async function judgeWrite(
  admin: NatsConnection,
  actor: NatsConnection,
  target: readonly [bucket: string, key: string],
  attack: () => Promise<string | undefined>,
  also: readonly (readonly [bucket: string, key: string])[] = [],
): Promise<Observed> {
  const watched = [target, ...also];
  const before = await Promise.all(watched.map(([b, k]) => stored(admin, b, k)));
  const said = await attack().catch((err: unknown) => refusal(err));
  await actor.flush();
  await sleep(SETTLE_MS);
  const after = await Promise.all(watched.map(([b, k]) => stored(admin, b, k)));
  const changed = watched.filter((_, i) => !sameStored(before[i]!, after[i]!)).map(([b, k]) => `${k} of ${b}`);
  if (changed.length > 0) return { verdict: 'allowed', how: `${changed.join(', ')} changed` };
  const kept = watched.map(([, k]) => k).join(', ');
  return { verdict: 'refused', how: `${said ? `${said}; ` : ''}${kept} unchanged` };
}

/** Judges a read by what it returned: the stored value is allowed (`label` says it), anything else refused with why. */
export async function judgeRead(real: string, read: () => Promise<string | null | undefined>, label = 'read the stored value'): Promise<Observed> {
  const got = await attempt(read);
  if (!got.ok) return { verdict: 'refused', how: got.why };
  if (got.value === real) return { verdict: 'allowed', how: label };
  return { verdict: 'refused', how: got.value == null ? 'nothing read' : `read something else: ${got.value.slice(0, 60)}` };
}

/** Judges a request by whether anything answered it: `ask` resolves with the JetStream error it was answered with, if any. */
export async function judgeAnswer(ask: () => Promise<string | undefined>, label = 'answered'): Promise<Observed> {
  const got = await attempt(ask);
  if (!got.ok) return { verdict: 'refused', how: got.why };
  return got.value === undefined ? { verdict: 'allowed', how: label } : { verdict: 'refused', how: got.value };
}
