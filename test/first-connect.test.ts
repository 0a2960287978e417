// A daemon's first connection to the bus (shared/bus/first-connect.ts, issue 22): what it says while the
// bus is not there, driven on a fake clock, so the exact waits and lines are asserted without sleeping.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { errors, type NatsConnection } from '@nats-io/transport-node';
import { connectWhenReachable } from '../src/shared/bus/first-connect.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { fakeClock, flush } from './helpers/clock.ts';

const BUS = { servers: ['nats://127.0.0.1:1'], name: 'test' };
const refused = () => new errors.ConnectionError('connection refused', { cause: new Error('connect ECONNREFUSED 127.0.0.1:1') });
const connection = { getServer: () => '127.0.0.1:1', close: async () => {} } as unknown as NatsConnection;
const said = (lines: string[]) => lines.map((l) => l.replace(/^\S+ /, ''));

test('a bus not there: one warning per reason, the tries at debug on the doubling wait, the connection at notice', async () => {
  const clock = fakeClock();
  const log = memoryLogger();
  const failures: Error[] = [refused(), refused(), refused(), new errors.AuthorizationError('Authorization Violation')];
  const connecting = connectWhenReachable({
    bus: { ...BUS, warnings: ['--nkey s.nk: mode 644 lets others read the seed; chmod 600 s.nk'] },
    log,
    signalled: new Promise(() => {}),
    login: 'this login (public key UX): is --nkey the seed of provisioner.n1?',
    timer: clock.timer,
    attempt: async () => {
      const next = failures.shift();
      if (next) throw next;
      return connection;
    },
  });
  await flush();
  assert.equal(clock.pending(), [250]);
  await clock.advance(250 + 500 + 1000 + 2000);
  assert.is(await connecting, connection);
  assert.equal(said(log.lines), [
    'warning --nkey s.nk: mode 644 lets others read the seed; chmod 600 s.nk',
    'warning cannot reach the bus at nats://127.0.0.1:1 (connection refused: connect ECONNREFUSED 127.0.0.1:1); trying again',
    'debug cannot reach the bus at nats://127.0.0.1:1 (connection refused: connect ECONNREFUSED 127.0.0.1:1); trying again in 500 ms',
    'debug cannot reach the bus at nats://127.0.0.1:1 (connection refused: connect ECONNREFUSED 127.0.0.1:1); trying again in 1000 ms',
    'warning the bus at nats://127.0.0.1:1 refuses this login (public key UX): is --nkey the seed of provisioner.n1? (Authorization Violation); trying again',
    'notice bus: connected to 127.0.0.1:1 after 4 failed tries',
  ]);
});

test('a stop while waiting ends the wait at once, with no connection, and cancels the timer', async () => {
  const clock = fakeClock();
  let stop!: () => void;
  const signalled = new Promise<void>((resolve) => (stop = resolve));
  const connecting = connectWhenReachable({ bus: BUS, log: memoryLogger(), signalled, timer: clock.timer, attempt: () => Promise.reject(refused()) });
  await flush();
  assert.equal(clock.pending(), [250]);
  stop();
  assert.is(await connecting, undefined);
  assert.equal(clock.pending(), []);
});

test.run();
