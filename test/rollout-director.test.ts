// The rollout director alone (DESIGN §12), its composer and bucket played by the test: a wave's
// nodes are planned only once the state naming that wave is stored, so a seat killed in between
// never finds a node planned past the wave it reads back. Its turns and timers are the test's: no
// test here sleeps.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { memoryLogger } from '../src/shared/cli/log.ts';
import type { Composition } from '../src/shared/contract/composition.ts';
import { RolloutDirector } from '../src/server/seat/rollout/director.ts';
import { STATE_RETRY_MS, StateWriter } from '../src/server/seat/rollout/store.ts';
import { waveOrder } from '../src/shared/contract/waves.ts';
import { fakeClock, flush } from './helpers/clock.ts';

const comp = (build: string): Composition => ({
  module: 'web',
  build,
  published: true,
  archive: { ref: `obj://a/web-${build}.tar`, digest: `sha256:${build}` },
  provisioning: { files: [], secrets: [], provisions: [], provides: [], items: [], collections: [] },
  rollout: { waves: [0.5, 1], halt: 1, wait: 60 },
});

/** The director's turns (setImmediate in the seat), run when the test says. */
function manualTurns() {
  const queued: (() => void)[] = [];
  return {
    turn: (fn: () => void) => void queued.push(fn),
    /** Runs every turn asked so far, and those they ask. */
    run() {
      while (queued.length > 0) queued.shift()!();
    },
  };
}

test('a rollout plans its first wave only once its state is stored', async () => {
  const nodes = ['a', 'b', 'c', 'd'];
  const stored: string[] = [];
  let release = () => {};
  const writer = new StateWriter(async (_m, bytes) => {
    await new Promise<void>((r) => (release = r));
    stored.push(JSON.parse(Buffer.from(bytes).toString()).state);
  }, memoryLogger());
  const recomposed: string[] = [];
  const clock = fakeClock();
  const director = new RolloutDirector(writer, () => {}, memoryLogger(), { now: clock.now, timer: clock.timer, turn: manualTurns().turn });
  director.attach({
    keysOf: () => nodes.map((n) => `${n}.web`),
    hasStoredPlan: () => true,
    isAssigned: () => true,
    composeFailure: () => undefined,
    recompose: (m) => void recomposed.push(m),
  });
  director.compositionChanged('web', comp('b1'));
  const b2 = comp('b2');
  director.compositionChanged('web', b2);
  const [first] = waveOrder('web', 'b2', nodes);
  assert.is(director.compositionFor(`${first}.web`, first!, 'web', b2)?.build, 'b1', 'not planned before its wave is stored');
  await flush();
  assert.equal([stored, recomposed], [[], []], 'nothing planned while the state is not stored');
  release();
  await flush();
  assert.equal(stored, ['rolling']);
  assert.equal(recomposed, ['web']);
  assert.is(director.compositionFor(`${first}.web`, first!, 'web', b2)?.build, 'b2');
  director.close();
});

test('a wave, and then its halt, compose again only the nodes they move, not every key of the module', async () => {
  const nodes = Array.from({ length: 10 }, (_, i) => `n${i}`);
  const recomposed: (string[] | 'all')[] = [];
  const writer = new StateWriter(async () => {}, memoryLogger());
  const clock = fakeClock();
  const turns = manualTurns();
  const director = new RolloutDirector(writer, () => {}, memoryLogger(), { now: clock.now, timer: clock.timer, turn: turns.turn });
  director.attach({
    keysOf: () => nodes.map((n) => `${n}.web`),
    hasStoredPlan: () => true,
    isAssigned: () => true,
    composeFailure: () => undefined,
    recompose: (_m, some) => void recomposed.push(some ? [...some].sort() : 'all'),
  });
  director.compositionChanged('web', comp('b1'));
  const b2 = { ...comp('b2'), rollout: { waves: [0.2, 1], halt: 1, wait: 60 } };
  director.compositionChanged('web', b2);
  director.passed();
  director.reportsRead();
  await flush();
  turns.run();
  const wave1 = waveOrder('web', 'b2', nodes).slice(0, 2);
  assert.equal(recomposed, [[...wave1].sort()], 'the first wave: its two nodes');
  for (const n of wave1) director.compositionFor(`${n}.web`, n, 'web', b2);
  director.seeReport(
    `${wave1[0]}.web`,
    Buffer.from(
      JSON.stringify({ node: wave1[0], module: 'web', build: 'b2', state: 'failed', reason: 'bad', files: [], waiting: [], at: new Date().toISOString() }),
    ),
    99,
  );
  assert.is(director.stateOf('web')?.state, 'rolling', 'judged at the next turn, not per report');
  turns.run();
  await flush();
  assert.is(director.stateOf('web')?.state, 'halted');
  assert.equal(recomposed.at(-1), [...wave1].sort(), 'the halt: the nodes on b2 only');
  director.close();
});

test('a state past the bus’s max_payload is said once at error with what to do, tried again quietly, and stored once it fits', async () => {
  const log = memoryLogger();
  const clock = fakeClock();
  let limit = 10;
  const stored: string[] = [];
  const writer = new StateWriter(
    async (_m, bytes) => {
      // As nats.js refuses a publish past the server's max_payload, before it sends.
      if (bytes.length > limit) throw new Error('MAX_PAYLOAD_EXCEEDED: max_payload size exceeded');
      stored.push(JSON.parse(Buffer.from(bytes).toString()).build);
    },
    log,
    clock.timer,
  );
  const state = { module: 'web', build: 'b2' } as unknown as Parameters<StateWriter['write']>[0];
  const written = writer.write(state);
  await flush();
  assert.equal(clock.pending(), [STATE_RETRY_MS], 'tried again after its wait');
  // Two more tries, refused as the first was.
  await clock.advance(STATE_RETRY_MS);
  await clock.advance(STATE_RETRY_MS);
  assert.equal(clock.pending(), [STATE_RETRY_MS]);
  const said = log.lines.filter((l) => l.includes('cannot be stored'));
  assert.is(said.length, 1, log.lines.join('\n'));
  assert.match(
    said[0]!,
    /error .*mesh-provisioner_rollouts web: the rollout of build b2 cannot be stored: its state is \d+ bytes, past the bus's max_payload .*raise max_payload/,
  );
  assert.not.ok(
    log.lines.some((l) => l.includes('write failed')),
    'no line per try',
  );
  limit = 1_000_000;
  await clock.advance(STATE_RETRY_MS);
  await written;
  assert.equal([stored, clock.pending()], [['b2'], []]);
  writer.close();
});

test.run();
