// Runs the test/*.test.ts suites (or those whose file name holds an argument), each in its own
// process, and closes with one line: N passed, N failed (and N skipped: a test that cannot run here,
// declared with uvu's test.skip, is neither). Each suite makes its own ports and
// directories, so several run at once: MESH_TEST_JOBS at a time, by default one per two cores and
// at least three (one on a single core). A suite that measures time or load runs alone, first. A
// pooled suite's output is printed whole when it ends, never mixed with another's. Each suite runs
// with its own TMPDIR, and what it left there, or left running, fails it (test/suite-temp.mjs). The
// run ends with the slowest suites, the time alone and pooled, and the load average: where time goes.
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { leftBehind, makeSuiteTemp } from './suite-temp.mjs';

/**
 * Suites run with nothing of this run beside them: those that assert a duration or measure load (a
 * busy neighbour would fail them or skew the figures they print), and one that rebuilds dist/.
 */
const ALONE = [
  /^faults-/, // kills, restarts and partitions servers against time budgets
  /^consumer-remake\./, // hedged creates timed to REMAKE_HEDGE_MS
  /^demo\./, // a change reaches the engine within 1 s; builds a release (rebuilds dist/)
  /^e2e-bindings\./, // prints the time a bound entry takes to be filled in
  /^e2e-postgres\./, // prints rotation latencies (p50, max)
  /^engine-socket\./, // timeouts of 290 ms told apart from their neighbours
  /^hostile-seat\./, // a burst of 5,000 requests: answered within 5 s, RSS growth bounded
  /^postgres-adapter\./, // a cancelled create stops within its grace + 500 ms
  /^provider-calls\./, // 10 creates of 100 ms on 3 slots within 900 ms
  /^release\./, // `npm run release` rebuilds dist/, which the other suites run and copy
  /^watch\./, // a watch resumes within its missed heartbeats after a reconnect
  /^watch-wan\./, // an idle watch's 500 ms heartbeats, none missed for 4 s after a WAN cut
];

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const suites = readdirSync(here)
  .filter((f) => f.endsWith('.test.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();

const cores = availableParallelism();
const jobs = poolSize(process.env['MESH_TEST_JOBS'], cores);
const startedAt = Date.now();
const results = new Map();
/** Each suite's wall time in seconds, printed at the end slowest first: where a run's time goes. */
const walls = new Map();
/** How long the suites run alone took, one by one: the floor under the pool. */
let aloneWall;

if (jobs === 1) {
  // One at a time, in name order, output as it comes: what a run on two cores always was.
  for (const suite of suites) record(suite, await runSuite(suite, true));
} else {
  // The suites that must be alone first, one by one, while the machine is otherwise idle; then the pool.
  const alone = suites.filter((s) => ALONE.some((re) => re.test(s)));
  for (const suite of alone) record(suite, await runSuite(suite, true));
  const pooled = suites.filter((s) => !alone.includes(s));
  if (alone.length > 0 && pooled.length > 0) aloneWall = Math.round((Date.now() - startedAt) / 100) / 10;
  let next = 0;
  const worker = async () => {
    while (next < pooled.length) {
      const suite = pooled[next++];
      record(suite, await runSuite(suite, false));
    }
  };
  await Promise.all(Array.from({ length: Math.min(jobs, pooled.length) }, worker));
}

let passed = 0;
let failed = 0;
let skipped = 0;
for (const suite of suites) {
  const { counted, broken } = results.get(suite);
  passed += counted.passed;
  failed += counted.failed;
  skipped += counted.skipped;
  if (broken) console.log(`# FAILED ${suite}: ${broken}`);
  if (counted.skipped > 0) console.log(`# SKIPPED ${suite}: ${counted.skipped} (its output says why)`);
}
const slowest = [...walls].sort((a, b) => b[1] - a[1]).slice(0, 15);
if (slowest.length > 1) {
  console.log(`# the slowest suites, wall time (* one of ALONE: it runs with nothing beside it, and the pool waits):`);
  for (const [suite, s] of slowest) console.log(`#   ${s.toFixed(1).padStart(6)}s ${ALONE.some((re) => re.test(suite)) ? '*' : ' '} ${suite}`);
}
const wall = Math.round((Date.now() - startedAt) / 100) / 10;
const load = loadavg()
  .map((l) => l.toFixed(2))
  .join(' ');
const split = aloneWall === undefined ? '' : ` (${aloneWall}s alone, ${Math.round((wall - aloneWall) * 10) / 10}s pooled)`;
console.log(`# ${suites.length} suites in ${wall}s wall time${split}, ${jobs} at a time on ${cores} cores (MESH_TEST_JOBS), load average ${load} at the end`);
console.log(`${passed} passed, ${failed} failed${skipped > 0 ? `, ${skipped} skipped` : ''}`);
process.exit(failed > 0 ? 1 : 0);

/**
 * The pool's size: MESH_TEST_JOBS when set, else one per two cores and at least three, one on a
 * single core. Three on two cores: a pooled suite mostly waits on servers — six pooled suites three
 * at a time kept 1.26 cores busy, their 128 suite-seconds done in 47 s (docs/decisions.md, issue 34).
 */
function poolSize(asked, cores) {
  if (asked === undefined || asked === '') return cores < 2 ? 1 : Math.max(3, Math.floor(cores / 2));
  const n = Number(asked);
  if (Number.isInteger(n) && n >= 1) return n;
  console.error(`test/run.mjs: MESH_TEST_JOBS is ${JSON.stringify(asked)}, not a whole number of at least 1`);
  process.exit(2);
}

/**
 * Runs one suite in its own process, with TMPDIR a fresh dir of its own, looked in once it ends.
 * `live` passes its output through as it comes; otherwise it is held, in the order its chunks came
 * on stdout and stderr, and written out whole when it ends.
 */
function runSuite(suite, live) {
  const started = Date.now();
  const tmp = makeSuiteTemp();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--import', join(here, 'suite-tmpdir.mjs'), join(here, suite)], {
      env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1', MESH_SUITE_TMPDIR: tmp },
      stdio: ['ignore', 'pipe', live ? 'inherit' : 'pipe'],
    });
    let text = '';
    const held = [];
    child.stdout.on('data', (d) => {
      text += d;
      if (live) process.stdout.write(d);
      else held.push([process.stdout, d]);
    });
    child.stderr?.on('data', (d) => held.push([process.stderr, d]));
    // 'close', not 'exit': the streams are read to their end before the summary is looked for.
    child.on('close', async (code, signal) => {
      const left = await leftBehind(tmp);
      for (const [stream, d] of held) stream.write(d);
      if (left) console.log(`# ${suite} ${left}`);
      const seconds = Math.round((Date.now() - started) / 100) / 10;
      walls.set(suite, seconds);
      console.log(`# ${suite}: ${seconds}s`);
      resolve({ text, code: code ?? signal, left });
    });
  });
}

/**
 * Counts a suite's tests from its uvu summary, and says why it failed when it did. uvu's Total
 * leaves out the skipped tests (1 run and 1 skipped: Total 1, Passed 1, Skipped 1). What the suite
 * left behind counts as one failure more, whatever its tests said.
 */
function record(suite, { text, code, left }) {
  const total = Number(/Total:\s+(\d+)/.exec(text)?.[1] ?? NaN);
  const ok = Number(/Passed:\s+(\d+)/.exec(text)?.[1] ?? NaN);
  const skipped = Number(/Skipped:\s+(\d+)/.exec(text)?.[1] ?? 0);
  const leftFailed = left ? 1 : 0;
  if (Number.isNaN(total) || Number.isNaN(ok)) {
    const broken = [`no uvu summary (exit ${code})`, left].filter(Boolean).join('; ');
    results.set(suite, { counted: { passed: 0, failed: 1 + leftFailed, skipped: 0 }, broken });
    return;
  }
  const failed = total - ok;
  const said = [code !== 0 || failed > 0 ? `${failed} failed (exit ${code})` : undefined, left].filter(Boolean);
  results.set(suite, { counted: { passed: ok, failed: failed + leftFailed, skipped }, broken: said.length > 0 ? said.join('; ') : undefined });
}
