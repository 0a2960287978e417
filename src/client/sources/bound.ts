// Bound values (`${bound:<provision>[.<local>]:<key>}`, DESIGN §7 point 9): what a provider served
// this node's consumers, from `<provider>_bound`: per provider a plan of this node names, a literal
// direct get of each provision's key and a watch of `<node>.>` that begins at the stream's tail
// (sources/keyed.ts), started and stopped as plans come and go. An entry answering another
// request than the plan's provision (DESIGN §3, `for`) is not there yet.
import type { NatsConnection } from '@nats-io/transport-node';
import { requestDigest } from '../../shared/contract/bound-request.ts';
import { KeyedReads } from './keyed.ts';
import { boundBucket, boundKey, parseBoundKey } from '../../shared/contract/keys.ts';
import type { Logger } from '../../shared/cli/log.ts';
import { BoundEntrySchema, CREDENTIAL_SET, type BoundEntry } from '../../shared/contract/bound-entry.ts';
import { decodeJson } from '../../shared/contract/decode.ts';
import type { Plan } from '../../shared/contract/plan.ts';
import type { Found, Lookup, OnChange, Source, ValueFrom, Wanted } from './source.ts';
import { bindingName, resolveBound, type BoundRef } from '../../module/plan-names.ts';

type Provision = Plan['provisions'][number];

/** A bound entry as held: the provider's entry and the input it is (its key and revision, DESIGN §14), or why it is out of shape. */
type Held = { entry: BoundEntry; from: ValueFrom } | { invalid: string };

/** The dependency key of a module's binding. */
export function boundDependency(module: string, binding: string): string {
  return `bound:${module}:${binding}`;
}

/**
 * The bound value a file naming the provision's credential reads (DESIGN §7 point 9): the mark its
 * provider changes each time it sets the credential, so the file waits for the provider's entry
 * and is filled again with each new mark.
 */
export function credentialSetWanted(p: Pick<Provision, 'provision' | 'local'>): Wanted {
  return { kind: 'bound', name: `${bindingName(p)}:${CREDENTIAL_SET}` };
}

/**
 * What a bound entry gives for a field: `as`, `user`, or a key of `values` (a string, or a number
 * written as JSON writes it); CREDENTIAL_SET is empty when the provider does not say it. `from`:
 * the entry as an input (DESIGN §14), carried by the value.
 */
export function boundField(entry: BoundEntry, field: string, where: string, from?: ValueFrom): Lookup {
  if ('refused' in entry) return { state: 'failed', reason: `${where}: the provider refused: ${entry.refused}` };
  let text: string;
  if (field === 'as') text = entry.as;
  else if (field === 'user') text = entry.user;
  else if (field === CREDENTIAL_SET && !Object.hasOwn(entry.values, field)) text = '';
  else if (!Object.hasOwn(entry.values, field)) return { state: 'failed', reason: `${where}: the provider served no value "${field}"` };
  else text = String(entry.values[field]);
  return from ? { state: 'value', text, from } : { state: 'value', text };
}

/** The `for` each provision entry of the plans read asks to be answered with, made once per entry read. */
const digests = new WeakMap<Provision, string>();

/**
 * Whether a bound entry answers the plan's provision (DESIGN §3): an entry naming the request it
 * answers (`for`) must name this one; an entry without `for` (a provider that does not say it) is
 * taken as before.
 */
export function answers(entry: BoundEntry, provision: Provision): boolean {
  if (entry.for === undefined) return true;
  let digest = digests.get(provision);
  if (digest === undefined) digests.set(provision, (digest = requestDigest(provision)));
  return entry.for === digest;
}

/** What the module's report says of a bound entry answering an earlier request than its plan's. */
export function staleNote(bucket: string, key: string, p: Pick<Provision, 'provider' | 'provision'>): string {
  return `${bucket} ${key} answers an earlier request of ${p.provision}: waiting for ${p.provider} to answer the new request (the plan's provision changed)`;
}

/** Starts the bound source of `node`: watches are opened by `plansChanged`. */
export function boundSource(nc: NatsConnection, node: string, log: Logger, onChange: OnChange): Source {
  const watches = new Map<string, KeyedReads>();
  const entries = new Map<string, Map<string, Held>>();
  const watchProvider = (bucket: string) => {
    const held = new Map<string, Held>();
    entries.set(bucket, held);
    return new KeyedReads(
      nc,
      bucket,
      node,
      (e) => {
        const key = parseBoundKey(e.key);
        if (!key.ok || key.value.node !== node)
          return log.warn(`${bucket} ${e.key}: key out of shape: ${key.ok ? `names node ${key.value.node}` : key.reason}`);
        if (e.value === null) held.delete(e.key);
        else {
          const decoded = decodeJson(BoundEntrySchema, e.value);
          if (!decoded.ok) log.warn(`${bucket} ${e.key}: the provider's entry is out of shape: ${decoded.reason}`);
          held.set(e.key, decoded.ok ? { entry: decoded.value, from: [{ kind: 'bound', key: e.key, rev: e.revision }] } : { invalid: decoded.reason });
        }
        onChange([boundDependency(key.value.module, bindingName(key.value))]);
      },
      log,
    );
  };
  const boundLookup = (plan: Plan, { provision, field }: BoundRef): Lookup => {
    const bucket = boundBucket(provision.provider);
    const key = boundKey(node, plan.module, provision.provision, provision.local);
    const held = entries.get(bucket)?.get(key);
    if (held === undefined) {
      const read = watches.get(bucket)?.want(key);
      return read?.state === 'unread' ? { state: 'waiting', unread: read.read } : { state: 'waiting' };
    }
    if ('invalid' in held) return { state: 'failed', reason: `${bucket} ${key}: the provider's entry is out of shape: ${held.invalid}` };
    // An answer to another request (the build before, asking other values) is not this plan's: wait for the provider's answer.
    if (!answers(held.entry, provision)) return { state: 'waiting', notes: [staleNote(bucket, key, provision)] };
    return boundField(held.entry, field, `${bucket} ${key}`, held.from);
  };
  return {
    name: 'bound',
    lookup(plan: Plan, wanted: Wanted): Found {
      // Resolved once: the binding it names is both the entry read and the key a change of it is known by.
      const ref = resolveBound(plan, wanted.name);
      if (!('provision' in ref)) return { state: 'failed', reason: ref.reason, dependency: boundDependency(plan.module, wanted.name) };
      return { ...boundLookup(plan, ref), dependency: boundDependency(plan.module, bindingName(ref.provision)) };
    },
    plansChanged(plans) {
      const wanted = new Set([...plans.values()].flatMap((p) => p.provisions.map((x) => boundBucket(x.provider))));
      for (const bucket of wanted) if (!watches.has(bucket)) watches.set(bucket, watchProvider(bucket));
      // Every key the plans name is read now, many in flight at once, not one by one as fills meet them.
      for (const plan of plans.values())
        for (const p of plan.provisions) watches.get(boundBucket(p.provider))?.want(boundKey(node, plan.module, p.provision, p.local));
      for (const [bucket, watch] of watches) {
        if (wanted.has(bucket)) continue;
        watch.stop();
        watches.delete(bucket);
        entries.delete(bucket);
      }
    },
    settled: () => Promise.all([...watches.values()].map((w) => w.settled())).then(() => undefined),
    stop() {
      for (const watch of watches.values()) watch.stop();
      watches.clear();
    },
  };
}
