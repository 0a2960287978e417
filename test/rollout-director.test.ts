// The rollout director alone (DESIGN §12), its composer and bucket played by the test: a wave's
// nodes are planned only once the state naming that wave is stored, so a seat killed in between
// never finds a node planned past the wave it reads back.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { memoryLogger } from '../src/shared/log.ts';
import type { Composition } from '../src/shared/schemas.ts';
import { RolloutDirector } from '../src/server/seat/rollout/director.ts';
import { StateWriter } from '../src/server/seat/rollout/store.ts';
import { waveOrder } from '../src/server/seat/rollout/waves.ts';
import { digestOf } from '../src/server/seat/digest.ts';

const comp = (build: string): Composition => ({
  module: 'web',
  build,
  published: true,
  archive: { ref: `obj://a/web-${build}.tar`, digest: `sha256:${build}` },
  provisioning: { files: [], secrets: [], provisions: [], provides: [], items: [], collections: [] },
  rollout: { waves: [0.5, 1], halt: 1, wait: 60 },
});
const known = (c: Composition) => ({ parsed: { ok: true as const, value: c }, digest: digestOf(JSON.stringify(c)) });

test('a rollout plans its first wave only once its state is stored', async () => {
  const nodes = ['a', 'b', 'c', 'd'];
  const stored: string[] = [];
  let release = () => {};
  const writer = new StateWriter(async (_m, bytes) => {
    await new Promise<void>((r) => (release = r));
    stored.push(JSON.parse(Buffer.from(bytes).toString()).state);
  }, memoryLogger());
  const recomposed: string[] = [];
  const director = new RolloutDirector(writer, () => {}, memoryLogger());
  director.attach({
    keysOf: () => nodes.map((n) => `${n}.web`),
    hasStoredPlan: () => true,
    isAssigned: () => true,
    recompose: (m) => void recomposed.push(m),
  });
  director.compositionChanged('web', known(comp('b1')));
  const b2 = comp('b2');
  director.compositionChanged('web', known(b2));
  const [first] = waveOrder('web', 'b2', nodes);
  assert.is(director.compositionFor(`${first}.web`, first!, 'web', b2)?.build, 'b1', 'not planned before its wave is stored');
  await new Promise((r) => setImmediate(r));
  release();
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(stored, ['rolling']);
  assert.equal(recomposed, ['web']);
  assert.is(director.compositionFor(`${first}.web`, first!, 'web', b2)?.build, 'b2');
  director.close();
});

test.run();
