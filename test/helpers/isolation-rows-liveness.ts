// The isolation rows of liveness (DESIGN §14): the seat alone hears every node's alive message and the
// bus's connect and disconnect events of node accounts; a node's logins hear neither another's alive
// message nor any event, and the vault none of them.
import type { NatsConnection } from '@nats-io/transport-node';
import { aliveSubject, ALIVE_ALL } from '../../src/shared/contract/subjects.ts';
import { USERS } from '../../src/server/commands/bus-config/users.ts';
import { clientConnectionName } from '../../src/shared/contract/alive.ts';
import { DISCONNECT_EVENTS, eventSubject } from '../../src/server/seat/liveness/events.ts';
import { refusal, SETTLE_MS, type Observed } from './isolation-probe.ts';
import { sleep } from './wait.ts';
import { A, B, client, runner, type MatrixContext, type Row } from './isolation-actions.ts';

/** Subscribes `subject` as `actor`, runs `trigger` twice, and says whether anything came. */
async function heard(c: MatrixContext, actor: string, subject: string, trigger: () => Promise<unknown>): Promise<Observed> {
  const nc: NatsConnection = c.as(actor);
  const sub = nc.subscribe(subject);
  const closed = sub.closed.then((e) => (e instanceof Error ? refusal(e) : 'closed'));
  await nc.flush().catch(() => {});
  for (let i = 0; i < 2 && sub.getReceived() === 0; i++) {
    await trigger();
    await sleep(SETTLE_MS);
  }
  const count = sub.getReceived();
  sub.unsubscribe();
  const why = await Promise.race([closed, sleep(SETTLE_MS).then(() => 'subscribed')]);
  return count > 0 ? { verdict: 'allowed', how: `received ${count} message(s)` } : { verdict: 'refused', how: `${why}; nothing received` };
}

/** nb's client says it is alive. */
const nbAlive = (c: MatrixContext) => async () => {
  c.as(USERS.client(B)).publish(aliveSubject(B), '{}');
  await c.as(USERS.client(B)).flush();
};

/** nb's client opens a connection and closes it: a connect and a disconnect event of nb's account. */
const nbComesAndGoes = (c: MatrixContext) => async () => {
  const nc = await c.connect(USERS.client(B), clientConnectionName(B));
  await nc.close();
};

/** The rows. */
export const LIVENESS_ROWS: readonly Row[] = [
  {
    actor: USERS.seat,
    action: `subscribe \`${ALIVE_ALL}\` while nb says it is alive`,
    expected: 'allowed',
    run: (c) => heard(c, USERS.seat, ALIVE_ALL, nbAlive(c)),
  },
  {
    actor: USERS.seat,
    action: `subscribe \`${DISCONNECT_EVENTS}\` while nb's client connects and closes (the event names its account and user)`,
    expected: 'allowed',
    run: (c) => heard(c, USERS.seat, DISCONNECT_EVENTS, nbComesAndGoes(c)),
  },
  {
    actor: client,
    action: `subscribe nb's alive subject \`${aliveSubject(B)}\` while nb says it is alive`,
    expected: 'refused',
    run: (c) => heard(c, client, aliveSubject(B), nbAlive(c)),
  },
  {
    actor: client,
    action: `subscribe nb's disconnect events \`${eventSubject(B, 'DISCONNECT')}\` while nb's client connects and closes`,
    expected: 'refused',
    run: (c) => heard(c, client, eventSubject(B, 'DISCONNECT'), nbComesAndGoes(c)),
  },
  {
    actor: client,
    action: `subscribe its own node's disconnect events \`${eventSubject(A, 'DISCONNECT')}\``,
    expected: 'refused',
    run: (c) => heard(c, client, eventSubject(A, 'DISCONNECT'), async () => (await c.connect(USERS.runner(A))).close()),
  },
  {
    actor: runner,
    action: `subscribe \`${aliveSubject(A)}\` (its own node's alive message)`,
    expected: 'refused',
    run: (c) =>
      heard(c, runner, aliveSubject(A), async () => {
        c.as(client).publish(aliveSubject(A), '{}');
        await c.as(client).flush();
      }),
  },
  {
    actor: USERS.vault,
    action: `subscribe \`${DISCONNECT_EVENTS}\` while nb's client connects and closes`,
    expected: 'refused',
    run: (c) => heard(c, USERS.vault, DISCONNECT_EVENTS, nbComesAndGoes(c)),
  },
];
