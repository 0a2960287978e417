// The seat's ears for liveness (DESIGN §14): every client's alive message, the bus's connect and
// disconnect events of node accounts, and a clock that judges silence; each node's health said once
// on `provisioner_health` when it begins and once when it ends.
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { ALIVE_ALL, HEALTH_SUBJECT } from '../../../shared/contract/subjects.ts';
import { AliveSchema, DISCONNECT_SILENT_SECONDS } from '../../../shared/contract/alive.ts';
import { decodeJson } from '../../../shared/contract/decode.ts';
import { parseBoundedJson } from '../../../shared/contract/limits.ts';
import { jsonBytes } from '../../../shared/base/bytes.ts';
import { errorText } from '../../../shared/base/errors.ts';
import { unrefTimer, type Timer } from '../../../shared/base/timer.ts';
import { safeText } from '../../../shared/cli/safe-text.ts';
import type { Logger } from '../../../shared/cli/log.ts';
import type { NodeHealth } from '../../../shared/contract/verb.ts';
import { CONNECT_EVENTS, DISCONNECT_EVENTS, readEvent } from './events.ts';
import { LivenessMemory, type Change } from './memory.ts';

/** How often the seat judges silence by age, in ms: well within the 15 s of grace. */
export const LIVENESS_TICK_MS = 1000;

/** The largest alive message or event read, in bytes (an event is under 2 KiB). */
const MAX_WORD_BYTES = 16 * 1024;

/** The end of a node's health on `provisioner_health`: the reason that ended, after this. */
export const ENDED_PREFIX = 'ended: ';

/** A running liveness listener and its memory. */
export type Liveness = { memory: LivenessMemory; stop(): void };

/** Starts listening; `now` and `timer` are the seat's (tests hand in their own). */
export function listenLiveness(nc: NatsConnection, log: Logger, time: { now?: () => number; timer?: Timer } = {}): Liveness {
  const now = time.now ?? Date.now;
  const timer = time.timer ?? unrefTimer;
  const memory = new LivenessMemory(now);
  const saidBad = new Set<string>();
  const bad = (what: string, reason: string) => {
    // Said once per subject and reason: a node sending a bad word every period must not fill the log.
    const line = `${what}: ${reason}`;
    if (saidBad.has(line) || saidBad.size > 1000) return;
    saidBad.add(line);
    log.warn(safeText(`liveness: ignored ${line}`));
  };
  const judge = (node?: string) => sayChanges(nc, log, memory.changes(node));
  const onAlive = (msg: Msg) => {
    const node = msg.subject.slice(ALIVE_ALL.length - 1);
    const read = decodeJson(AliveSchema, msg.data, { maxBytes: MAX_WORD_BYTES });
    if (!read.ok) return bad(`an alive message on ${msg.subject}`, read.reason);
    if (read.value.node !== node) return bad(`an alive message on ${msg.subject}`, `its node ${JSON.stringify(read.value.node)} is not the subject's`);
    memory.heard(read.value);
    // One node's word changes its health alone: judging the whole fleet per word would be O(N²) a period.
    judge(node);
  };
  const onEvent = (msg: Msg) => {
    const raw = parseBoundedJson(msg.data, { maxBytes: MAX_WORD_BYTES });
    const read = raw.ok ? readEvent(msg.subject, raw.value) : raw;
    if (!read.ok) return bad(`the event ${msg.subject}`, read.reason);
    const e = read.event;
    if (!e) return;
    if (e.kind === 'CONNECT') memory.connected(e.node, e.connection);
    else {
      memory.disconnected(e.node, e.connection);
      log.info(safeText(`liveness: node ${e.node}'s client closed its connection; silent in ${DISCONNECT_SILENT_SECONDS} s unless it comes back`));
      timer(() => judge(e.node), DISCONNECT_SILENT_SECONDS * 1000 + 1);
    }
    judge(e.node);
  };
  const subs = [subscribe(nc, log, ALIVE_ALL, onAlive), subscribe(nc, log, CONNECT_EVENTS, onEvent), subscribe(nc, log, DISCONNECT_EVENTS, onEvent)];
  let stopped = false;
  let tick: { cancel(): void } | undefined;
  const loop = () => {
    if (stopped) return;
    judge();
    tick = timer(loop, LIVENESS_TICK_MS);
  };
  tick = timer(loop, LIVENESS_TICK_MS);
  return {
    memory,
    stop() {
      stopped = true;
      tick?.cancel();
      for (const s of subs) s.unsubscribe();
    },
  };
}

function subscribe(nc: NatsConnection, log: Logger, subject: string, on: (msg: Msg) => void): Subscription {
  return nc.subscribe(subject, {
    callback: (err, msg) => {
      // A bus configured before liveness (bus-config not run again) refuses it: said with what to do.
      if (err)
        return log.error(
          `liveness: the bus refuses the seat's subscription to ${subject} (${errorText(err)}): run bus-config again and reload nats-server; until then no node is called silent from it`,
        );
      try {
        on(msg);
      } catch (e) {
        log.error(`liveness: ${subject}: ${errorText(e)}`);
      }
    },
  });
}

/** Says each change on `provisioner_health` (`{node, reason}`; an end as `ended: <reason>`) and in the log. */
function sayChanges(nc: NatsConnection, log: Logger, changes: Change[]): void {
  for (const c of changes) {
    if (c.ended !== undefined) {
      log.notice(safeText(`node ${c.node}: ${ENDED_PREFIX}${c.ended}`));
      publish(nc, log, { node: c.node, reason: `${ENDED_PREFIX}${c.ended}` });
    }
    if (c.began !== undefined) {
      log.warn(safeText(`node ${c.node}: ${c.began}`));
      publish(nc, log, { node: c.node, reason: c.began });
    }
  }
}

function publish(nc: NatsConnection, log: Logger, line: NodeHealth): void {
  try {
    nc.publish(HEALTH_SUBJECT, jsonBytes(line));
  } catch (err) {
    log.error(safeText(`provisioner_health: could not say "${line.reason}": ${errorText(err, { name: true })}`));
  }
}
