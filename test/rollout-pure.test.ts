// The pure parts of a progressive rollout (DESIGN §12): the waves' sizes computed exactly, their
// membership stable and spread, the seat's --rollout read like a composition's, a wave measured.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { parseRolloutFlag } from '../src/server/seat/rollout/policy.ts';
import { measureWave, type NodeClock, type SeenReport } from '../src/server/seat/rollout/progress.ts';
import { cutOf, nodeHash, reachedBy, waveOrder, waveSize } from '../src/shared/contract/waves.ts';
import { judgeWave } from '../src/server/seat/rollout/judge.ts';
import { abortRollout, describeState, haltRollout, refusal, resumeRollout, startRollout, withFailed, withRecovered } from '../src/server/seat/rollout/steps.ts';
import { compositionOf, newLive, reachedNodes } from '../src/server/seat/rollout/live.ts';
import { MAX_FAILED_LISTED, readRolloutState } from '../src/shared/contract/rollout-state.ts';
import { markOfComposition, markOfPlan, markOfPlanHead, markOfWholePlan } from '../src/server/seat/rollout/marks.ts';
import { composePlan } from '../src/server/seat/compose.ts';
import { AssignmentSchema } from '../src/shared/contract/assignment.ts';
import { CompositionSchema, type Composition } from '../src/shared/contract/composition.ts';
import { decodeJson } from '../src/shared/contract/decode.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { parseServerOptions } from '../src/server/command-line.ts';
import { formatRollout } from '../src/server/commands/rollout/format.ts';

test('a wave is ⌈f·N⌉ computed exactly: 0.07 of 100 is 7, 0.1 of 30 is 3, 0.29 of 100 is 29', () => {
  assert.is(waveSize(0.07, 100), 7);
  assert.is(0.07 * 100 > 7, true, 'the float product is past 7, which is why it is not used');
  assert.is(waveSize(0.1, 30), 3);
  assert.is(waveSize(0.29, 100), 29);
  assert.is(waveSize(0.01, 5000), 50);
  assert.is(waveSize(0.01, 1), 1);
  assert.is(waveSize(1, 5000), 5000);
  assert.is(waveSize(1e-7, 3), 1);
  assert.is(waveSize(0.5, 3), 2);
});

test('a wave size is ⌈num·N / 10⁴⌉ in integers for every fraction num/10⁴', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 1, max: 100_000 }), (num, n) => {
      // Integers: num·n is exact well within 2⁵³, so the ceiling of the quotient is too.
      assert.is(waveSize(num / 10_000, n), Math.floor((num * n + 9_999) / 10_000), `${num / 10_000} of ${n}`);
    }),
  );
});

test('waves are cumulative and never shrink: wave k+1 holds wave k', () => {
  fc.assert(
    fc.property(fc.uniqueArray(fc.integer({ min: 1, max: 99 }), { maxLength: 5 }), fc.integer({ min: 1, max: 3000 }), (cents, n) => {
      const waves = [...cents.sort((a, b) => a - b).map((c) => c / 100), 1];
      let before = 0;
      for (let k = 1; k <= waves.length; k++) {
        const size = reachedBy(waves, k, n);
        assert.ok(size >= before && size >= 1 && size <= n);
        before = size;
      }
      assert.is(before, n);
    }),
  );
});

test('wave order is the sha256 of <module>.<build>.<node>, whatever order the nodes come in', () => {
  const nodes = Array.from({ length: 50 }, (_, i) => `n${i}`);
  const order = waveOrder('web', 'b2', nodes);
  const expected = [...nodes].sort((a, b) => {
    const h = (n: string) => createHash('sha256').update(`web.b2.${n}`).digest('hex');
    return h(a) < h(b) ? -1 : 1;
  });
  assert.equal(order, expected);
  fc.assert(
    fc.property(fc.shuffledSubarray(nodes, { minLength: 50 }), (shuffled) => {
      assert.equal(waveOrder('web', 'b2', shuffled), order);
    }),
  );
  assert.not.equal(waveOrder('web', 'b3', nodes), order, 'another build spreads its waves anew');
});

test('the first wave of a build is spread: over 10 builds of 1,000 nodes, no node is first every time', () => {
  const nodes = Array.from({ length: 1000 }, (_, i) => `node-${i}`);
  const firsts = new Set<string>();
  for (let b = 0; b < 10; b++) for (const n of waveOrder('web', `b${b}`, nodes).slice(0, 10)) firsts.add(n);
  assert.ok(firsts.size > 90, `${firsts.size} distinct nodes in the first waves`);
});

test('--rollout reads WAVES[/HALT[/WAIT]] with the defaults, and refuses what a composition would', () => {
  assert.equal(parseRolloutFlag('0.01,0.1,1/1/600'), { ok: true, value: { waves: [0.01, 0.1, 1], halt: 1, wait: 600 } });
  assert.equal(parseRolloutFlag('0.5,1'), { ok: true, value: { waves: [0.5, 1], halt: 1, wait: 600 } });
  assert.equal(parseRolloutFlag('0.5,1/3'), { ok: true, value: { waves: [0.5, 1], halt: 3, wait: 600 } });
  assert.equal(parseRolloutFlag('1//2.5'), { ok: true, value: { waves: [1], halt: 1, wait: 2.5 } });
  for (const bad of ['0.5', '0.5,0.2,1', '0,1', '1/0', '1/x', '1/1/0', '1/1/-3', 'a,1', '1/1/1/1', '', '1.5']) {
    const read = parseRolloutFlag(bad);
    assert.is(read.ok, false, bad);
  }
  assert.match((parseRolloutFlag('0.5,0.2,1') as { reason: string }).reason, /strictly increase/);
});

test('a wave: applied after the plan counts, a failed report fails, waiting is not a failure until wait has passed', () => {
  const clocks = new Map<string, NodeClock>();
  const clockOf = (n: string) => clocks.get(n) ?? (clocks.set(n, { since: 1000, after: 10, applied: false }), clocks.get(n)!);
  const reports = new Map<string, SeenReport>([
    ['a', { state: 'applied', build: 'b2', revision: 11 }],
    ['b', { state: 'applied', build: 'b2', revision: 9 }],
    ['c', { state: 'waiting', build: 'b2', revision: 12 }],
    ['d', { state: 'failed', build: 'b2', revision: 13, reason: 'typo' }],
    ['e', { state: 'failed', build: 'b1', revision: 14 }],
  ]);
  const input = {
    build: 'b2',
    waitS: 5,
    reached: ['a', 'b', 'c', 'd', 'e', 'gone'],
    assigned: (n: string) => n !== 'gone',
    clockOf,
    composeFailure: () => undefined,
    reportOf: (n: string) => reports.get(n),
    everyReportSeen: true,
  };
  const early = measureWave({ ...input, now: 2000 });
  assert.equal(early, { planned: 5, applied: 1, failed: [{ node: 'd', reason: 'failed: typo' }], deadline: 6000 });
  reports.set('a', { state: 'waiting', build: 'b2', revision: 20 });
  const late = measureWave({ ...input, now: 6000 });
  assert.is(late.applied, 1, 'an applied build stays applied through a later waiting');
  assert.equal(
    late.failed.map((f) => f.node),
    ['b', 'c', 'd', 'e'],
  );
  assert.is(late.failed[1]!.reason, 'no applied report of b2 within 5 s (its report: waiting)');
  // The node's own word on why: the values it waits for, its reason; or that it sent no report of the build.
  reports.set('c', { state: 'waiting', build: 'b2', revision: 21, waited: ['config:color', 'port:http'], reason: 'engine refused /etc/x (undeclared)' });
  reports.set('b', { state: 'applied', build: 'b1', revision: 22 });
  const said = measureWave({ ...input, now: 6000 }).failed;
  assert.is(
    said.find((f) => f.node === 'c')!.reason,
    'no applied report of b2 within 5 s (its report: waiting for config:color, port:http: engine refused /etc/x (undeclared))',
  );
  assert.is(said.find((f) => f.node === 'b')!.reason, 'no applied report of b2 within 5 s (no report of b2; its last: applied on b1)');
  reports.delete('b');
  assert.is(
    measureWave({ ...input, now: 6000 }).failed.find((f) => f.node === 'b')!.reason,
    'no applied report of b2 within 5 s (no report of b2, nor any other)',
  );
  // A rollout started while the seat ran saw only the reports since: none seen is not none sent.
  assert.is(
    measureWave({ ...input, now: 6000, everyReportSeen: false }).failed.find((f) => f.node === 'b')!.reason,
    'no applied report of b2 within 5 s (no report since the rollout began)',
  );
});

const comp = (build: string): Composition => ({
  module: 'web',
  build,
  published: true,
  provisioning: { files: [], secrets: [], provisions: [], provides: [], items: [], collections: [] },
});

test('resume and abort are refused on a done rollout, saying so; resume only lifts a halt', () => {
  const rolling = startRollout({
    target: comp('b2'),
    digest: 'd',
    from: comp('b1'),
    policy: { waves: [0.5, 1], halt: 1, wait: 1 },
    members: ['a', 'b'],
    now: 0,
  });
  assert.is(rolling.nodes.planned, 1);
  assert.match(refusal({ ...rolling, state: 'done' }, 'resume')!, /is done: nothing to resume/);
  assert.match(refusal({ ...rolling, state: 'done' }, 'abort')!, /is done: nothing to abort/);
  assert.match(refusal(rolling, 'resume')!, /not halted/);
  assert.match(
    refusal({ ...rolling, state: 'aborted' }, 'resume')!,
    /is aborted, not halted: an aborted rollout is not resumed; publish a new build to roll out again$/,
  );
  assert.is(refusal(rolling, 'abort'), undefined);
  assert.is(refusal({ ...rolling, state: 'halted' }, 'resume'), undefined);
});

test('a rolling wave with failed nodes below halt says the rollout goes on past them, and what to do', () => {
  const rolling = startRollout({ target: comp('b2'), digest: 'd', from: comp('b1'), policy: { waves: [1], halt: 2, wait: 1 }, members: ['a', 'b'], now: 0 });
  assert.not.match(describeState(rolling), /failed/);
  const spent = withFailed(rolling, [{ node: 'a', reason: 'failed: bad' }]);
  assert.match(
    describeState(spent),
    /; 1 failed node\(s\) \(a: failed: bad\), fewer than halt 2: the rollout goes on and they keep b2; fix them \(`status` shows them failed\), or `rollout abort web`$/,
  );
});

test('a node the seat cannot compose the new build for is said on the plan it keeps; the others keep the new build; one applied since leaves the list', () => {
  const rolling = startRollout({
    target: comp('b2'),
    digest: 'd',
    from: comp('b1'),
    policy: { waves: [1], halt: 3, wait: 1 },
    members: ['a', 'b', 'c'],
    now: 0,
  });
  const uncomposed = { node: 'b', reason: 'cannot compose b2: file web.conf: ${dir:state} is not in the placement' };
  const mixed = {
    ...withFailed(rolling, [{ node: 'a', reason: 'failed: bad' }, uncomposed]),
    state: 'done' as const,
    nodes: { ...rolling.nodes, applied: 1, failed: 2 },
  };
  assert.match(
    describeState(mixed),
    /: done with failures, 2 of 3 node\(s\) on b2, 2 failed node\(s\) \(a: failed: bad; b keeps its plan of b1: cannot compose b2: .*\) \(fewer than halt 3\); the others keep b2: fix them/,
  );
  // Its stored plan, as the seat saw it, is named; once composed with the new build, it is on it.
  assert.match(
    describeState(mixed, (n) => (n === 'b' ? 'b0' : undefined)),
    /b keeps its plan of b0: cannot compose b2/,
  );
  assert.match(
    describeState(mixed, () => 'b2'),
    /: done with failures, 3 node\(s\) on b2, .*\(a: failed: bad; b: cannot compose b2: .*\); they keep b2/,
  );
  const alone = withRecovered(mixed, new Set(['a']));
  assert.equal([alone.nodes, alone.failed], [{ total: 3, planned: 3, applied: 2, failed: 1 }, [uncomposed]]);
  assert.match(
    describeState(alone),
    /done with failures, 2 of 3 node\(s\) on b2, 1 failed node\(s\) \(b keeps its plan of b1: .*\) \(fewer than halt 3\): fix them/,
  );
  assert.match(describeState({ ...alone, state: 'rolling' }), /fewer than halt 3: the rollout goes on; fix them/);
  assert.match(describeState(withRecovered(alone, new Set(['b']))), /: done, 3 node\(s\) on b2$/);
});

test('a halt is said naming the first five failed nodes and how many more', () => {
  const rolling = startRollout({ target: comp('b2'), digest: 'd', from: comp('b1'), policy: { waves: [1], halt: 7, wait: 1 }, members: ['a'], now: 0 });
  const failed = Array.from({ length: 7 }, (_, i) => ({ node: `n${i}`, reason: 'failed: bad' }));
  const line = describeState(haltRollout(rolling, failed, 0));
  assert.match(line, /halted at wave 1 by 7 failed node\(s\) \(n0: failed: bad; .*n4: failed: bad; and 2 more\); planned back to b1/);
  assert.match(line, /; next: `rollout resume web` \(the failed nodes again, with the next wave\), `rollout abort web`, or publish a fixed build$/);
});

test('a rollout from a build the seat never saw stores no previous; each node keeps its plan, and halt and abort say so', () => {
  const members = waveOrder('web', 'b3', ['a', 'b']);
  const rolling = startRollout({ target: comp('b3'), digest: 'd', from: 'b1', policy: { waves: [0.5, 1], halt: 1, wait: 1 }, members, now: 0 });
  assert.equal([rolling.from, 'previous' in rolling], ['b1', false]);
  assert.is(readRolloutState('web', Buffer.from(JSON.stringify(rolling))).ok, true, 'a state without previous is read back');
  const live = newLive(rolling, comp('b3'), 1);
  const [first, second] = members;
  assert.equal(compositionOf(live, first!, true, comp('b3')), { composition: comp('b3'), reached: true });
  assert.equal(compositionOf(live, second!, true, comp('b3')), { composition: undefined, reached: false }, 'not reached: keeps its stored plan');
  const halted = newLive(haltRollout(rolling, [{ node: first!, reason: 'failed: bad' }], 0), comp('b3'), 1);
  assert.is(compositionOf(halted, first!, true, comp('b3')).composition, undefined, 'no last good composition to plan back to');
  assert.is(compositionOf(halted, 'anew', false, comp('b3')).composition?.build, 'b3', 'a node with no plan gets the newest');
  assert.match(
    describeState(halted.state),
    /halted at wave 1 .*; its nodes on b3 keep it \(the seat never saw b1's composition: publish b1 again to plan them back\)/,
  );
  assert.match(describeState(abortRollout(rolling, 0)), /aborted by an operator; its nodes on b3 keep it.*; publish a new build to roll out again$/);
});

test('the seat reads --rollout or MESH_ROLLOUT, refusing a bad one naming the flag; rollout takes its words', () => {
  const env = parseServerOptions([], { MESH_ROLLOUT: '0.1,1/2/30' });
  assert.equal(env.ok && env.value.command === 'serve' && env.value.rollout, { waves: [0.1, 1], halt: 2, wait: 30 });
  const none = parseServerOptions([], {});
  assert.is(none.ok && none.value.command === 'serve' && none.value.rollout, undefined, 'no rollout unless asked');
  const bad = parseServerOptions(['--rollout', '0.5,0.2,1'], {});
  assert.equal(bad, { ok: false, reason: '--rollout: waves holds 0.2 (wave 2) after 0.5: the waves must strictly increase' });
  const show = parseServerOptions(['rollout', 'web', '--json'], {});
  assert.ok(show.ok && show.value.command === 'rollout' && show.value.op === 'show' && show.value.module === 'web' && show.value.json);
  const abort = parseServerOptions(['rollout', 'abort', 'web'], {});
  assert.ok(abort.ok && abort.value.command === 'rollout' && abort.value.op === 'abort' && abort.value.module === 'web');
  assert.equal(parseServerOptions(['rollout', 'resume'], {}), { ok: false, reason: 'rollout resume needs a MODULE' });
  assert.is(parseServerOptions(['rollout', 'abort', 'web', 'x'], {}).ok, false);
  assert.is(parseServerOptions(['rollout', 'Web'], {}).ok, false);
  // A misspelt action before a module is said as such, not as the module being an argument too many.
  assert.equal(parseServerOptions(['rollout', 'resum', 'web'], {}), {
    ok: false,
    reason: 'rollout: "resum" is neither resume nor abort; did you mean "resume"?',
  });
  assert.equal(parseServerOptions(['rollout', 'web', 'db'], {}), { ok: false, reason: 'rollout: "web" is neither resume nor abort' });
});

test('wave k is every node hashed at most its cut: the same nodes as the first ⌈fₖ·N⌉ in wave order', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 300 }), fc.uniqueArray(fc.integer({ min: 1, max: 99 }), { maxLength: 4 }), (n, cents) => {
      const waves = [...cents.sort((a, b) => a - b).map((c) => c / 100), 1];
      const names = Array.from({ length: n }, (_, i) => `node-${i}`);
      const members = waveOrder('web', 'b2', names);
      const state = startRollout({ target: comp('b2'), digest: 'd', from: comp('b1'), policy: { waves, halt: 1, wait: 1 }, members, now: 0 });
      assert.is(state.cuts.length, waves.length);
      for (let k = 1; k <= waves.length; k++) {
        const cut = cutOf(state.cuts, k)!;
        const inWave = names.filter((node) => nodeHash('web', 'b2', node) <= cut).sort();
        assert.equal(inWave, members.slice(0, reachedBy(waves, k, n)).sort(), `wave ${k} of ${n}`);
      }
    }),
    { numRuns: 50 },
  );
});

test('the state keeps no member list: at 50,000 nodes with every one failed it stays within 64 KiB beside the previous composition', () => {
  const members = waveOrder(
    'web',
    'b2',
    Array.from({ length: 50_000 }, (_, i) => `node-${String(i).padStart(5, '0')}`),
  );
  const state = startRollout({
    target: comp('b2'),
    digest: 'd',
    from: comp('b1'),
    policy: { waves: [0.01, 0.1, 0.5, 1], halt: 50_000, wait: 600 },
    members,
    now: 0,
  });
  // The worst a state holds: every node failed, names as long as a name may be, each with a long reason of its own
  // (control characters take six bytes each as JSON, CJK three).
  const reasons = ['y'.repeat(5000), '\u0001'.repeat(5000), '界'.repeat(5000), '😀'.repeat(5000)];
  const failed = withFailed(
    state,
    members.map((node, i) => ({ node: `${node}-${'x'.repeat(63 - node.length - 1)}`, reason: `failed: ${reasons[i % reasons.length]}` })),
  );
  assert.equal([failed.failed.length, failed.nodes.failed], [MAX_FAILED_LISTED, 50_000]);
  assert.ok(
    failed.failed.every((f) => Buffer.byteLength(JSON.stringify(f.reason)) <= 300 && f.reason.endsWith('…') && !/[\uD800-\uDBFF]…$/.test(f.reason)),
    'each reason clipped within 300 bytes, never inside a character',
  );
  assert.not.ok('members' in failed);
  const beside = jsonBytes(failed).length - jsonBytes(failed.previous).length;
  assert.ok(beside <= 64 * 1024, `${beside} bytes beside the previous composition`);
});

test('rollout lists the failed nodes the state keeps and counts the others', () => {
  const state = startRollout({ target: comp('b2'), digest: 'd', from: comp('b1'), policy: { waves: [1], halt: 200, wait: 1 }, members: ['a'], now: 0 });
  const lines = formatRollout(
    withFailed(
      state,
      Array.from({ length: 150 }, (_, i) => ({ node: `n${i}`, reason: 'failed: bad' })),
    ),
  );
  assert.match(lines[0]!, /nodes: 1 planned of 1, 0 applied, 150 failed/);
  assert.is(lines.filter((l) => l.startsWith('  failed ')).length, 100);
  assert.is(lines.at(-1), '  … and 50 more failed, not listed (the state lists the first 100)');
});

test('a state an older seat wrote with its member list is read with the cuts that list gives', () => {
  const members = waveOrder('web', 'b2', ['a', 'b', 'c', 'd', 'e']);
  const state = startRollout({ target: comp('b2'), digest: 'd', from: comp('b1'), policy: { waves: [0.4, 1], halt: 1, wait: 1 }, members, now: 0 });
  const { cuts, ...rest } = state;
  const legacy = readRolloutState('web', Buffer.from(JSON.stringify({ ...rest, members: [...members].reverse() })));
  assert.ok(legacy.ok, !legacy.ok ? legacy.reason : '');
  assert.equal(legacy.ok && legacy.value.cuts, cuts);
  assert.not.ok(legacy.ok && 'members' in legacy.value, 'the list is not carried on');
  const neither = readRolloutState('web', Buffer.from(JSON.stringify(rest)));
  assert.match(!neither.ok ? neither.reason : 'read', /"cuts"/, 'neither cuts nor members: out of shape, naming cuts');
});

test('halt is a budget: a wave whose nodes each applied or failed, fewer than halt, moves on; done keeps its failures listed', () => {
  const names = ['a', 'b', 'c', 'd'];
  const members = waveOrder('web', 'b2', names);
  const state = startRollout({ target: comp('b2'), digest: 'd', from: comp('b1'), policy: { waves: [0.5, 1], halt: 2, wait: 60 }, members, now: 0 });
  const live = newLive(state, comp('b2'), 1);
  const world = { nodes: names, assigned: () => true, composeFailure: () => undefined };
  live.reports.set(members[0]!, { state: 'failed', build: 'b2', revision: 5, reason: 'bad' });
  assert.is(judgeWave(live, 1000, 0, world).kind, 'wait', 'one node not heard of yet');
  live.reports.set(members[1]!, { state: 'applied', build: 'b2', revision: 6 });
  const next = judgeWave(live, 1000, 0, world);
  assert.equal([next.kind, next.state.wave, next.state.nodes.failed, next.state.failed], ['next', 2, 1, [{ node: members[0], reason: 'failed: bad' }]]);
  live.state = next.state;
  live.storedWave = 2;
  live.reports.set(members[2]!, { state: 'applied', build: 'b2', revision: 7 });
  live.reports.set(members[3]!, { state: 'applied', build: 'b2', revision: 8 });
  const done = judgeWave(live, 2000, 0, world);
  assert.equal([done.kind, done.state.state, done.state.nodes.applied, done.state.nodes.failed, done.state.failed.length], ['next', 'done', 3, 1, 1]);
  assert.match(describeState(done.state), /done with failures, 4 node\(s\) on b2, 1 failed node\(s\) \(.*: failed: bad\) \(fewer than halt 2\); they keep b2/);
  // A second failure reaches halt: halted.
  live.reports.set(members[3]!, { state: 'failed', build: 'b2', revision: 9, reason: 'worse' });
  const halted = judgeWave(live, 2000, 0, world);
  assert.equal([halted.kind, halted.state.nodes.failed], ['halt', 2]);
});

test('a wave node whose plan of the new build cannot be composed fails at once, not after wait', () => {
  const names = ['a', 'b'];
  const members = waveOrder('web', 'b2', names);
  const state = startRollout({ target: comp('b2'), digest: 'd', from: comp('b1'), policy: { waves: [1], halt: 2, wait: 600 }, members, now: 0 });
  const live = newLive(state, comp('b2'), 1);
  const why = "file web.conf: ${dir:state} is not in the assignment's placement";
  const judged = judgeWave(live, 1, 0, { nodes: names, assigned: () => true, composeFailure: (n) => (n === members[0] ? why : undefined) });
  assert.equal(judged.state.failed, [{ node: members[0], reason: `cannot compose b2: ${why}` }]);
  assert.not.ok(live.clocks.has(members[0]!), 'its wait starts once its plan is written');
});

test('a node assigned during a halt joins the wave its hash falls in; one assigned while rolling gets the newest at once, uncounted', () => {
  const names = Array.from({ length: 10 }, (_, i) => `n${i}`);
  const members = waveOrder('web', 'b2', names);
  const rolling = startRollout({ target: comp('b2'), digest: 'd', from: comp('b1'), policy: { waves: [0.2, 0.5, 1], halt: 1, wait: 60 }, members, now: 0 });
  const live = newLive(rolling, comp('b2'), 1);
  // Assigned while rolling: no plan, the newest at once, and not a node of the wave.
  const anew = Array.from({ length: 40 }, (_, i) => `new${i}`).find((n) => nodeHash('web', 'b2', n) <= rolling.cuts[0]!)!;
  assert.equal(compositionOf(live, anew, false, comp('b2')), { composition: comp('b2'), reached: false });
  assert.equal(reachedNodes(live, [...names, anew]), members.slice(0, 2));
  // Halted, then resumed at wave 2: nodes assigned during the halt got b1, and join by their hash.
  const halted = newLive(haltRollout(rolling, [{ node: members[0]!, reason: 'failed: bad' }], 0), comp('b2'), 1);
  const joined = Array.from({ length: 40 }, (_, i) => `late${i}`);
  for (const n of joined) assert.is(compositionOf(halted, n, false, comp('b2')).composition?.build, 'b1');
  const resumed = newLive(resumeRollout(halted.state, 0), comp('b2'), 2);
  const cut = resumed.state.cuts[1]!;
  for (const n of joined) {
    const want = nodeHash('web', 'b2', n) <= cut ? 'b2' : 'b1';
    assert.is(compositionOf(resumed, n, true, comp('b2')).composition?.build, want, n);
  }
  assert.ok(joined.some((n) => nodeHash('web', 'b2', n) <= cut) && joined.some((n) => nodeHash('web', 'b2', n) > cut), 'both kinds among them');
});

/** A plan as the seat writes it (composer.ts: composePlan's value, stringified) for `build` and `ref`; undefined when the seat would refuse the composition. */
function seatPlanBytes(build: string, ref: string): Uint8Array | undefined {
  const assignment = decodeJson(AssignmentSchema, jsonBytes({ node: 'n1', module: 'web', placement: {} }));
  const composition = decodeJson(
    CompositionSchema,
    jsonBytes({
      module: 'web',
      build,
      published: true,
      archive: { ref, digest: `sha256:${'ab'.repeat(32)}` },
      provisioning: { files: [{ path: '/etc/web/a.conf', template: 'a.conf' }] },
    }),
  );
  if (!assignment.ok) throw new Error(`the test's assignment: ${assignment.reason}`);
  if (!composition.ok) return undefined;
  const plan = composePlan(assignment.value, composition.value);
  if (!plan.ok) throw new Error(plan.reason);
  return Buffer.from(JSON.stringify(plan.value));
}

test("a stored plan's mark is read from its head when the seat wrote it, and equals the whole plan's", () => {
  // The seat's own plans take the fast path: a change of compose.ts's key order fails here, not silently slower.
  const plain = seatPlanBytes('2026.12.02-1', 'obj://mesh-catalog_archives/web.tar.gz')!;
  assert.is(markOfPlanHead(plain), markOfComposition({ build: '2026.12.02-1', archive: { ref: '', digest: `sha256:${'ab'.repeat(32)}` } }));
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 60 }), (build, tail) => {
      const bytes = seatPlanBytes(build, `obj://b/${tail}`);
      fc.pre(bytes !== undefined);
      assert.is(markOfPlan(bytes), markOfWholePlan(bytes), JSON.stringify(build));
      assert.ok(markOfPlanHead(bytes) !== undefined, 'the fast path took it');
    }),
  );
});

test('a plan that does not begin as the seat writes one is parsed whole: another order, a long head, not JSON', () => {
  const digest = `sha256:${'cd'.repeat(32)}`;
  const reordered = jsonBytes({ module: 'web', node: 'n1', build: 'b1', archive: { ref: 'r', digest } });
  assert.is(markOfPlanHead(reordered), undefined);
  assert.is(markOfPlan(reordered), markOfComposition({ build: 'b1', archive: { ref: '', digest } }));
  const longRef = jsonBytes({ node: 'n1', module: 'web', build: 'b2', archive: { ref: `obj://b/${'x'.repeat(5000)}`, digest } });
  assert.is(markOfPlanHead(longRef), undefined);
  assert.is(markOfPlan(longRef), markOfComposition({ build: 'b2', archive: { ref: '', digest } }));
  // A raw control character in the build: the head matches the pattern but is not JSON, and neither is the whole.
  const broken = Buffer.from(`{"node":"n1","module":"web","build":"a\tb\u0001","archive":{"ref":"r","digest":"${digest}"},"files":[]}`);
  assert.is(markOfPlanHead(broken), undefined);
  assert.is(markOfPlan(broken), '');
  assert.is(markOfPlan(Buffer.from('not a plan')), '');
  assert.is(markOfPlan(jsonBytes({ node: 'n1', module: 'web', build: 'b3' })), markOfComposition({ build: 'b3' }));
});

test.run();
