// The seat's figures for Prometheus (issue 33 item 4) without a bus: `--metrics` read and refused,
// the reports tallied, the text the registry serves, and the listener (a port taken, 404, 405).
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { parseServerOptions } from '../src/server/command-line.ts';
import { serverHelp } from '../src/server/help.ts';
import { parseListenAddress } from '../src/server/metrics/listen-address.ts';
import { ReportTally } from '../src/server/metrics/report-tally.ts';
import { SeatFigures } from '../src/server/metrics/seat-figures.ts';
import { serveMetrics } from '../src/server/metrics/endpoint.ts';
import { figuresOf } from './helpers/scrape.ts';
import { FIGURES } from '../src/server/metrics/names.ts';
import { ROOT } from './helpers/bundle.ts';

const report = (state: string, drift: number[] = []) =>
  jsonBytes({
    node: 'n1',
    module: 'web',
    build: '1',
    state,
    files: drift.map((count, i) => ({ path: `/etc/web/${i}.conf`, action: 'restored', digest: 'sha256:x', drift: { count, last: '2026-12-06T00:00:00Z' } })),
    waiting: [],
    at: '2026-12-06T00:00:00Z',
  });

test('--metrics HOST:PORT (or MESH_METRICS) is read; a bad one is refused naming where it came from', () => {
  const serve = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseServerOptions(argv, env);
  const given = serve(['--metrics', '127.0.0.1:9464']);
  assert.equal(given.ok && given.value.command === 'serve' && given.value.metrics, { address: { host: '127.0.0.1', port: 9464 }, from: '--metrics' });
  const six = serve([], { MESH_METRICS: '[::1]:9464' });
  assert.equal(six.ok && six.value.command === 'serve' && six.value.metrics, { address: { host: '::1', port: 9464 }, from: 'MESH_METRICS' });
  const none = serve([]);
  assert.is(none.ok && none.value.command === 'serve' && none.value.metrics, undefined, 'no endpoint unless asked');
  assert.equal(serve(['--metrics', '127.0.0.1:0']), { ok: false, reason: '--metrics: port 0 of "127.0.0.1:0" is not 1–65535' });
  assert.equal(serve(['--metrics', 'localhost:65536']), { ok: false, reason: '--metrics: port 65536 of "localhost:65536" is not 1–65535' });
  assert.equal(serve([], { MESH_METRICS: '9464' }), {
    ok: false,
    reason: 'MESH_METRICS: "9464" is not HOST:PORT (an IPv6 address in brackets: [::1]:9464)',
  });
  for (const bad of [':9464', '::1:9464', 'host:', 'host:94x', 'a b:1', 'http://h:1']) assert.is(parseListenAddress(bad).ok, false, `${bad} is refused`);
  assert.match(serverHelp(), /--metrics HOST:PORT\s+.*MESH_METRICS/);
});

test('the tally counts each key by its latest report and sums its files drift.count; a deletion or an unreadable value moves the counts', () => {
  const tally = new ReportTally();
  tally.see('n1.web', report('waiting'));
  tally.see('n2.web', report('applied', [2, 1]));
  tally.see('n1.web', report('applied', [4]));
  assert.equal([tally.inState('applied'), tally.inState('waiting'), tally.restores()], [2, 0, 7]);
  tally.see('n2.web', report('failed'));
  tally.see('n3.web', new TextEncoder().encode('{"node":"n3"'));
  assert.equal([tally.inState('applied'), tally.inState('failed'), tally.outOfShape(), tally.restores()], [1, 1, 1, 4]);
  tally.see('n1.web', null);
  tally.see('n3.web', null);
  assert.equal([tally.inState('applied'), tally.outOfShape(), tally.restores()], [0, 0, 0]);
});

test('the registry serves each figure under its provisioner_ name with the counts its sources give; liveness is left out until kept', async () => {
  const figures = new SeatFigures();
  const { observer } = figures;
  observer.report('n1.web', report('applied', [3]));
  observer.report('n2.web', report('removed'));
  observer.verb.request('applied');
  observer.verb.request('applied');
  observer.verb.request('invalid');
  observer.verb.busy();
  observer.planWritten('put', true);
  observer.planWritten('put', false);
  observer.planWritten('delete', true);
  let text = await figures.registry.metrics();
  let seen = figuresOf(text);
  assert.is(seen.get('provisioner_seat_ready'), 0);
  assert.not.ok(
    [...seen.keys()].some((k) => k.startsWith('provisioner_nodes')),
    'no liveness figure while the seat keeps none',
  );
  figures.seatReady({ states: () => [['web', 'halted'] as const, ['db', 'done'] as const] });
  figures.readLivenessFrom({ counts: () => ({ alive: 5, silent: 2, engineDown: 1 }) });
  text = await figures.registry.metrics();
  seen = figuresOf(text);
  const expected: Record<string, number> = {
    provisioner_seat_ready: 1,
    'provisioner_nodes{liveness="alive"}': 5,
    'provisioner_nodes{liveness="silent"}': 2,
    'provisioner_nodes{liveness="engine_down"}': 1,
    'provisioner_modules{state="applied"}': 1,
    'provisioner_modules{state="removed"}': 1,
    'provisioner_modules{state="waiting"}': 0,
    provisioner_drift_restores: 3,
    'provisioner_rollouts{state="halted"}': 1,
    'provisioner_rollouts{state="done"}': 1,
    'provisioner_rollouts{state="rolling"}': 0,
    'provisioner_rollout_state{module="web",state="halted"}': 1,
    'provisioner_verb_requests_total{what="applied"}': 2,
    'provisioner_verb_requests_total{what="invalid"}': 1,
    provisioner_verb_busy_total: 1,
    'provisioner_plan_writes_total{op="put",result="ok"}': 1,
    'provisioner_plan_writes_total{op="put",result="error"}': 1,
    'provisioner_plan_writes_total{op="delete",result="ok"}': 1,
  };
  for (const [name, value] of Object.entries(expected)) assert.is(seen.get(name), value, name);
  assert.ok(seen.has('provisioner_process_cpu_seconds_total'), "prom-client's process figures, prefixed");
  assert.match(text, /# HELP provisioner_nodes Nodes with a plan by their client's last word/);
  assert.match(text, /# TYPE provisioner_verb_requests_total counter/);
  // provisioner_health is the seat's health subject on the bus: no figure takes its name.
  assert.not.ok([...seen.keys()].some((k) => k.startsWith('provisioner_health')));
});

test('the endpoint answers GET /metrics in the text format, 404 elsewhere, 405 to a POST; a port taken is refused in words', async () => {
  const log = memoryLogger();
  const figures = new SeatFigures();
  const served = await serveMetrics({ host: '127.0.0.1', port: 0 }, figures.registry, log);
  assert.ok(served.ok);
  if (!served.ok) return;
  const base = `http://127.0.0.1:${served.value.port}`;
  try {
    const ok = await fetch(`${base}/metrics`);
    assert.is(ok.status, 200);
    assert.match(ok.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    assert.match(await ok.text(), /^provisioner_seat_ready 0$/m);
    const other = await fetch(`${base}/`);
    assert.is(other.status, 404);
    assert.match(await other.text(), /the figures are at \/metrics/);
    const post = await fetch(`${base}/metrics`, { method: 'POST' });
    assert.is(post.status, 405);
    await post.text();
    const taken = await serveMetrics({ host: '127.0.0.1', port: served.value.port }, figures.registry, log);
    assert.equal(taken, { ok: false, reason: 'the address is already in use (another program listens there)' });
  } finally {
    await served.value.close();
  }
  // Closed means closed: nothing answers there any more.
  const probe = createServer();
  await new Promise<void>((resolve, reject) => probe.once('error', reject).listen(served.value.port, '127.0.0.1', resolve));
  probe.close();
});

test("deploy/README.md's figures, scrape config and alert rules name the figures as the seat serves them", async () => {
  const readme = readFileSync(join(ROOT, 'deploy', 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Monitoring'), readme.indexOf('## Upgrading'));
  const served = new Set<string>(Object.values(FIGURES).map((f) => f.name));
  const named = new Set([...section.matchAll(/(?<![\w-])provisioner_[a-z_]+\b/g)].map((m) => m[0]));
  const unknown = [...named].filter((n) => !served.has(n) && n !== 'provisioner_health' && !/^provisioner_(process|nodejs)_$/.test(n));
  assert.equal(unknown, [], 'named in deploy/README.md but not served');
  assert.equal(
    [...served].filter((n) => !named.has(n)),
    [],
    'served but not in the table',
  );
  assert.match(section, /expr: provisioner_nodes\{liveness="silent"\} > 0\n\s+for: 1m/);
  assert.match(section, /expr: provisioner_rollout_state\{state="halted"\} == 1/);
});

test.run();
