// How a watch's consumer is made again on a busy bus and while the bus fails over (src/shared/watch/remake.ts),
// against a fake of nats.js's private consumer API (src/shared/watch/internals.ts) whose creates the
// test answers, refuses or leaves unanswered, on a fake clock: exact times, no sleeping.
import { test } from 'uvu';
import { errors } from '@nats-io/transport-node';
import * as assert from 'uvu/assert';
import type { ConsumerConfig, ConsumerInfo, ConsumerMessages } from '@nats-io/jetstream';
import { orderedConsumer } from '../src/shared/watch/internals.ts';
import {
  hastenRemakes,
  REMAKE_AGAIN_MS,
  REMAKE_ANSWER_MS,
  REMAKE_RETRY_MAX_MS,
  REMAKE_RETRY_MS,
  REMAKE_TIMEOUT_MS,
  REMAKE_UNSETTLED_MS,
} from '../src/shared/watch/remake.ts';
import { fakeClock, flush } from './helpers/clock.ts';

/** The private consumer API as nats.js's reset calls it (`this.timeout` its request timeout). */
type ConsumerApi = {
  timeout: number;
  add(stream: string, config: ConsumerConfig): Promise<ConsumerInfo>;
  delete(stream: string, name: string): Promise<boolean>;
};

type Create = { name: string; deliver: string; timeout: number; at: number; made(): void; lost(): void; refused(why: string): void };

/**
 * An ordered consumer's private parts whose creates wait for the test; deletes recorded. `internals`
 * is the object nats.js's reset goes through, `consumer` what the watch holds of it.
 */
function fakeApi() {
  const clock = fakeClock();
  const creates: Create[] = [];
  const deleted: string[] = [];
  const api = {
    timeout: 5000,
    add(this: ConsumerApi, _stream: string, config: ConsumerConfig) {
      const timeout = this.timeout;
      return new Promise<ConsumerInfo>((resolve, reject) => {
        creates.push({
          name: config.name!,
          deliver: config.deliver_subject!,
          timeout,
          at: clock.now(),
          made: () => resolve({ name: config.name!, config } as unknown as ConsumerInfo),
          lost: () => reject(new errors.TimeoutError()),
          refused: (why) => reject(new Error(why)),
        });
      });
    },
    async delete(_stream: string, name: string) {
      deleted.push(name);
      return true;
    },
  };
  const resets: number[] = [];
  const internals = {
    reset: () => void resets.push(clock.now()),
    getConsumerOpts: () => ({}),
    cursor: { stream_seq: 0, deliver_seq: 0 },
    consumer: { api: api as unknown as ConsumerApi },
    monitor: null,
  };
  const consumer = orderedConsumer(internals as unknown as ConsumerMessages);
  return { clock, creates, deleted, resets, internals, consumer };
}

const config = (serial: number): ConsumerConfig => ({ name: `oc_${serial}`, deliver_subject: `_INBOX.d.${serial}` }) as ConsumerConfig;

test('on a calm cluster an unanswered create is asked again under its own name after 1, 2, 4, 4 s, and its late answer is the consumer: nothing deleted, nothing more asked', async () => {
  const f = fakeApi();
  const remakes = hastenRemakes(f.consumer, 'watch w', undefined, f.clock);
  const made = f.internals.consumer.api.add('KV_x', config(2));
  assert.ok(remakes.busy(), 'a re-make in flight');
  await f.clock.advance(REMAKE_RETRY_MS + 2 * REMAKE_RETRY_MS + REMAKE_RETRY_MAX_MS * 2);
  assert.equal(
    f.creates.map((c) => [c.name, c.at, c.timeout]),
    [0, 1000, 3000, 7000, 11000].map((at) => ['oc_2', at, REMAKE_ANSWER_MS]),
    'one name, asked again on a doubling wait up to 4 s, each waiting 10 s for its answer',
  );
  assert.ok(f.creates.every((c) => c.deliver === '_INBOX.d.2'));
  // The bus was busy: the first ask is answered 11 s late, then a second.
  f.creates[0]!.made();
  assert.is((await made).name, 'oc_2');
  assert.not.ok(remakes.busy());
  f.creates[1]!.made();
  f.creates[2]!.lost();
  await flush();
  assert.equal(f.deleted, [], 'the same consumer answered twice is not deleted');
  await f.clock.advance(REMAKE_RETRY_MAX_MS * 2);
  assert.is(f.creates.length, 5, 'no ask after one was answered');
  assert.equal(f.clock.pending(), [], 'no retry left armed');
});

test('within 20 s of a cluster change an unanswered create is given up after 0.5 s and the consumer reset again (a new name, a new subject) after 0, then 100 ms', async () => {
  const f = fakeApi();
  const lines: string[] = [];
  const refusals: Error[] = [];
  const remakes = hastenRemakes(f.consumer, 'watch w', { debug: (l) => lines.push(l) }, f.clock, (err) => refusals.push(err));
  remakes.clusterChanged();
  let settled = false;
  for (let serial = 2; serial <= 6; serial++) {
    void f.internals.consumer.api.add('KV_x', config(serial)).finally(() => (settled = true));
    f.creates.at(-1)!.lost();
    await flush();
    await f.clock.advance(REMAKE_TIMEOUT_MS);
  }
  assert.equal(
    f.creates.map((c) => [c.name, c.timeout]),
    [2, 3, 4, 5, 6].map((n) => [`oc_${n}`, REMAKE_TIMEOUT_MS]),
    'one ask a reset: no hedge on the watch’s subject',
  );
  assert.equal(
    f.resets.map((at, i) => at - i * REMAKE_TIMEOUT_MS),
    [0, REMAKE_AGAIN_MS, REMAKE_AGAIN_MS, REMAKE_AGAIN_MS, REMAKE_AGAIN_MS],
    'each give-up resets again: at once, then 100 ms later',
  );
  assert.not.ok(settled, 'a re-make given up never settles: nats.js neither takes it nor backs off');
  assert.equal(refusals, [], 'a timeout is no refusal');
  assert.is(lines.length, 5);
  assert.match(lines[1]!, `went unanswered for ${REMAKE_TIMEOUT_MS} ms after a cluster change; making it under a new name`);
  // Made at last: the next give-up resets at once again.
  const made = f.internals.consumer.api.add('KV_x', config(7));
  f.creates.at(-1)!.made();
  assert.is((await made).name, 'oc_7');
});

test('a re-make given up and answered before its replacement was sent is the consumer: no reset', async () => {
  const f = fakeApi();
  const remakes = hastenRemakes(f.consumer, 'watch w', undefined, f.clock);
  const made = f.internals.consumer.api.add('KV_x', config(2));
  remakes.clusterChanged(); // given up: its replacement goes on the next turn of the clock
  f.creates[0]!.made();
  assert.is((await made).name, 'oc_2');
  await f.clock.advance(REMAKE_TIMEOUT_MS);
  assert.equal(f.resets, [], 'no reset');
  assert.equal(f.deleted, []);
});

test('a cluster change during a calm re-make gives it up at once; 20 s later re-makes are calm again', async () => {
  const f = fakeApi();
  const remakes = hastenRemakes(f.consumer, 'watch w', undefined, f.clock);
  void f.internals.consumer.api.add('KV_x', config(2));
  await f.clock.advance(500);
  remakes.clusterChanged();
  await f.clock.advance(1);
  assert.equal(f.resets, [500], 'reset at once');
  const next = f.internals.consumer.api.add('KV_x', config(3));
  f.creates[1]!.made();
  assert.is((await next).name, 'oc_3');
  f.creates[0]!.made();
  await flush();
  assert.equal(f.deleted, ['oc_2'], 'the calm ask made late is a consumer nobody holds: deleted where the grants allow');
  await f.clock.advance(REMAKE_UNSETTLED_MS);
  void f.internals.consumer.api.add('KV_x', config(4));
  await f.clock.advance(REMAKE_RETRY_MS + 50);
  assert.equal(
    f.creates.slice(2).map((c) => [c.name, c.timeout]),
    [
      ['oc_4', REMAKE_ANSWER_MS],
      ['oc_4', REMAKE_ANSWER_MS],
    ],
  );
});

test('a create answered at once asks nothing more, calm or after a cluster change', async () => {
  for (const changed of [false, true]) {
    const f = fakeApi();
    const remakes = hastenRemakes(f.consumer, 'watch w', undefined, f.clock);
    if (changed) remakes.clusterChanged();
    const made = f.internals.consumer.api.add('KV_x', config(2));
    f.creates[0]!.made();
    assert.is((await made).name, 'oc_2');
    await f.clock.advance(REMAKE_RETRY_MAX_MS);
    assert.is(f.creates.length, 1);
  }
});

test('an answered refusal goes to nats.js at once, which waits before its next reset', async () => {
  const f = fakeApi();
  hastenRemakes(f.consumer, 'watch w', undefined, f.clock);
  const made = f.internals.consumer.api.add('KV_x', config(2));
  f.creates[0]!.refused('stream not found');
  await made.then(
    () => assert.unreachable('made'),
    (err: Error) => assert.is(err.message, 'stream not found'),
  );
  await f.clock.advance(REMAKE_RETRY_MAX_MS);
  assert.is(f.creates.length, 1);
});

test('a re-make replaced by a later reset never settles, sends nothing more, and its consumer is deleted if made', async () => {
  const f = fakeApi();
  hastenRemakes(f.consumer, 'watch w', undefined, f.clock);
  let settled = false;
  void f.internals.consumer.api.add('KV_x', config(2)).finally(() => (settled = true));
  const newer = f.internals.consumer.api.add('KV_x', config(3));
  f.creates[0]!.made();
  f.creates[1]!.made();
  assert.is((await newer).name, 'oc_3');
  await f.clock.advance(REMAKE_RETRY_MAX_MS);
  assert.not.ok(settled);
  assert.equal(f.deleted, ['oc_2']);
  assert.equal(
    f.creates.map((c) => c.name),
    ['oc_2', 'oc_3'],
  );
});

test('a stopped watch sends no more creates', async () => {
  const f = fakeApi();
  const remakes = hastenRemakes(f.consumer, 'watch w', undefined, f.clock);
  void f.internals.consumer.api.add('KV_x', config(2));
  remakes.stop();
  await f.clock.advance(REMAKE_RETRY_MAX_MS * 2);
  assert.is(f.creates.length, 1);
  assert.not.ok(remakes.busy());
});

test.run();
