// Runtime asks (DESIGN §7 point 13): `prov.ask.<node>` answered from the client's in-memory view
// (the value sources; no bus round trip per ask), and `prov.changed.<node>.<module>` said when an
// askable value changes — never the value itself.
import type { NatsConnection } from '@nats-io/transport-node';
import * as v from 'valibot';
import { jsonBytes } from '../shared/base/bytes.ts';
import { isInboxSubject } from '../shared/bus/inbox.ts';
import type { Logger } from '../shared/cli/log.ts';
import { PLACEMENT_KINDS } from '../shared/contract/registry.ts';
import { decodeJson } from '../shared/contract/decode.ts';
import type { Plan } from '../shared/contract/plan.ts';
import { askSubject, changedSubject } from '../shared/contract/subjects.ts';
import type { ValueLookup } from './sources/source.ts';
import { errorText } from '../shared/base/errors.ts';

/** The kinds a module may ask at run time: config, its bound values and its placement. */
export const ASKABLE_KINDS: readonly string[] = ['config', 'bound', ...PLACEMENT_KINDS];
/** Kinds that are never answered, whoever asks. */
const NEVER: Readonly<Record<string, string>> = {
  secret: 'a secret is never answered: the engine fills it, the client never holds it',
  consumers: "consumers' credentials are never answered: they live only in the provider's file",
};
/** Past this many asks waiting in the subscription, one more is answered `busy` at once. */
export const MAX_PENDING_ASKS = 1000;
/** The largest ask taken. */
export const MAX_ASK_BYTES = 4096;

const AskRequestSchema = v.strictObject({
  module: v.pipe(v.string(), v.maxLength(63)),
  kind: v.pipe(v.string(), v.maxLength(64)),
  key: v.pipe(v.string(), v.minLength(1, 'is empty'), v.maxLength(1024, 'is past 1024 characters')),
});

/** What the ask handler reads: the node's plans and its sources. */
export type AskView = {
  /** The node's modules: a module's valid plan, or undefined. */
  plans: { plan(module: string): Plan | undefined };
  /** The node's sources. */
  sources: ValueLookup;
};

/** An ask's answer. */
export type AskAnswer = { value: string } | { error: string };

/** Answers one ask body of `node`'s client; pure over the view, so tests and the bench can call it directly. */
export function answerAsk(body: Uint8Array, view: AskView, node: string): AskAnswer {
  const asked = askedValue(body, view, node);
  return 'unread' in asked ? { error: 'the value is being read from the bus; ask again' } : asked;
}

/**
 * Answers one ask once the value it names is read: a config key the client does not hold yet is read
 * by direct get first (sources/keyed.ts), so an ask is never answered "not resolved" for a key not read.
 */
export async function answerAskWhenRead(body: Uint8Array, view: AskView, node: string): Promise<AskAnswer> {
  // A key read, then (known absent) its module's keys read for a hint: a read or two.
  for (let reads = 0; reads < 3; reads++) {
    const asked = askedValue(body, view, node);
    if (!('unread' in asked)) return asked;
    await asked.unread;
  }
  return answerAsk(body, view, node);
}

/** The answer to an ask, or the read it waits for first. */
function askedValue(body: Uint8Array, view: AskView, node: string): { unread: Promise<void> } | AskAnswer {
  const ask = decodeJson(AskRequestSchema, body, { maxBytes: MAX_ASK_BYTES, maxDepth: 2 });
  if (!ask.ok) return { error: `bad request: ${ask.reason}` };
  const { module, kind, key } = ask.value;
  if (Object.hasOwn(NEVER, kind)) return { error: NEVER[kind]! };
  if (!ASKABLE_KINDS.includes(kind)) return { error: `kind "${kind}" cannot be asked (askable: ${ASKABLE_KINDS.join(', ')})` };
  const plan = view.plans.plan(module);
  if (!plan) return { error: `module "${module}" is not assigned to this node` };
  const found = view.sources.lookup(plan, { kind, name: key });
  if (found.state === 'value') return { value: found.text };
  if (found.state === 'waiting' && found.unread) return { unread: found.unread };
  if (found.state === 'waiting') return { error: `${kind} "${key}" is not resolved for ${module}${nextStep(kind, key, module, node, found.notes)}` };
  return { error: found.reason };
}

/**
 * What to do about a config key a module has not got: the nearest key it has, when one is near (the
 * source's note), and the command that sets it; nothing for another kind (its wait is the seat's or a
 * provider's, which `status` shows).
 */
function nextStep(kind: string, key: string, module: string, node: string, notes: readonly string[] = []): string {
  if (kind !== 'config') return '';
  const near = notes.map((n) => /: (did you mean .*)$/.exec(n)?.[1]).find((hint) => hint !== undefined);
  return ` on node ${node}${near ? ` (${near})` : ''}: set it with \`server.js config set ${node} ${module} ${key} VALUE\``;
}

/** Serves `prov.ask.<node>` until stopped; answers only inbox replies, `busy` past a backlog. */
export function serveAsks(nc: NatsConnection, node: string, view: AskView, log: Logger): { stop(): void } {
  const busy = jsonBytes({ error: 'busy' });
  let ignored = 0;
  const sub = nc.subscribe(askSubject(node), {
    callback: (err, msg) => {
      if (err) return log.warn(`asks: ${err.message}`);
      if (!msg.reply || !isInboxSubject(msg.reply)) {
        if (ignored++ === 0) log.warn(`asks: ignored an ask whose reply subject is not an inbox (further ones counted at debug)`);
        else log.debug(`asks: ${ignored} asks ignored for their reply subject`);
        return;
      }
      if (sub.getPending() > MAX_PENDING_ASKS) return void respond(msg, busy, log);
      void answerAskWhenRead(msg.data, view, node).then((answer) => respond(msg, jsonBytes(answer), log));
    },
  });
  return { stop: () => sub.unsubscribe() };
}

function respond(msg: { respond(data: Uint8Array): boolean }, data: Uint8Array, log: Logger): void {
  try {
    msg.respond(data);
  } catch (e) {
    log.warn(`asks: could not answer: ${errorText(e)}`);
  }
}

/** One notice of `prov.changed.<node>.<module>`: a kind, and the key when one key changed. */
export type Changed = { module: string; kind: string; key?: string };

/**
 * Says changed notices; each carries its kind and key, never a value. On a connection draining or
 * closed (the client stopping) nothing is said: a notice gathered in the turn the stop began would
 * otherwise throw from its deferred flush.
 */
export function publishChanged(nc: Pick<NatsConnection, 'publish' | 'isClosed' | 'isDraining'>, node: string, changes: Iterable<Changed>): void {
  if (nc.isClosed() || nc.isDraining()) return;
  for (const { module, kind, key } of changes) nc.publish(changedSubject(node, module), jsonBytes(key === undefined ? { kind } : { kind, key }));
}

/**
 * Gathers the notices of one turn of the event loop and says them once it has run (setImmediate),
 * each (module, kind, key) once: after the fills the turn started, since the notices' flush is a
 * socket write the engine need not wait for; and in one flush, since values read one get at a time
 * at a cold start (1,000 modules × 3 keys) each set off a notice, and each was its own write to the
 * bus (3,000 writes of 63 bytes).
 */
export class TurnNotices {
  #pending = new Map<string, Changed>();

  constructor(private readonly say: (notices: Changed[]) => void) {}

  /** Adds `notices` to those said at the end of this turn. */
  add(notices: Iterable<Changed>): void {
    const first = this.#pending.size === 0;
    for (const n of notices) this.#pending.set(`${n.module}\0${n.kind}\0${n.key ?? ''}`, n);
    if (first && this.#pending.size > 0) setImmediate(() => this.#flush());
  }

  #flush(): void {
    const notices = [...this.#pending.values()];
    this.#pending.clear();
    this.say(notices);
  }
}

/** The notices a client says for a module when it starts (or its plan changes): every askable kind. */
export function everyKind(module: string, kinds: readonly string[] = ASKABLE_KINDS): Changed[] {
  return kinds.map((kind) => ({ module, kind }));
}

/**
 * The askable kinds a module's plan change may answer differently: every kind when the module had or
 * has no valid plan (its asks were or are answered "not assigned"); otherwise each placement kind
 * whose values moved, and `bound` when the provisions did (a bound answer reads the provision it is
 * for). A config answer reads the module's values alone, so a new build that moves neither — its
 * files, archive and build — says nothing: no module is told to ask again what reads the same.
 */
export function kindsPlanMoved(before: Plan | undefined, after: Plan | undefined): readonly string[] {
  if (!before || !after) return ASKABLE_KINDS;
  const kinds: string[] = PLACEMENT_KINDS.filter((k) => JSON.stringify(before.placement[k]) !== JSON.stringify(after.placement[k]));
  if (JSON.stringify(before.provisions) !== JSON.stringify(after.provisions)) kinds.push('bound');
  return kinds;
}

/** The notices a changed dependency key (sources' `<source>:<module>:<rest>`) means. */
export function changedOf(dependency: string): Changed | undefined {
  const first = dependency.indexOf(':');
  const second = dependency.indexOf(':', first + 1);
  if (first < 0 || second < 0) return undefined;
  const source = dependency.slice(0, first);
  const module = dependency.slice(first + 1, second);
  const rest = dependency.slice(second + 1);
  if (source === 'config') return { module, kind: 'config', key: rest };
  // A binding's entry holds many keys (as, user, values): every bound key of the module may have changed.
  if (source === 'bound') return { module, kind: 'bound' };
  return undefined;
}
