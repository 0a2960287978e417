// Isolation on the bus (DESIGN §11, issue 12), on the configuration `bus-config` generates: every
// program logs in with the nkey seed of its own user (the seat as `provisioner`, never admin), the
// matrix of what each user may and may not do is checked by its effect and kept in docs/isolation.md,
// and the product works end to end under exactly those grants, through a nats-server restart.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { CONFIG } from '../src/shared/contract/buckets.ts';
import { needKey } from '../src/shared/contract/keys.ts';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { withIsolatedMesh } from './helpers/isolated-mesh.ts';
import { expected, matrixContext, startApplied, WEB } from './helpers/isolation-context.ts';
import { checkIsolationDoc, ISOLATION_DOC, renderTable, type MatrixLine } from './helpers/isolation-doc.ts';
import { A, B, MODULE, PROVIDER } from './helpers/isolation-actions.ts';
import { ROWS } from './helpers/isolation-rows.ts';
import { PROVIDER_ROWS } from './helpers/isolation-rows-provider.ts';
import { LIVENESS_ROWS } from './helpers/isolation-rows-liveness.ts';
import { GRANT_ROWS, NAMESAKES, STREAM_ROWS } from './helpers/isolation-rows-streams.ts';
import { widenGrants } from './helpers/isolation-widen.ts';
import { freePort } from './helpers/nats.ts';
import { waitFor } from './helpers/wait.ts';

/** How long a node or the seat may take to follow a change after nats-server restarts. */
const RECOVERY_MS = 20_000;

test('the isolation matrix: every action by a real connection comes out as expected, as docs/isolation.md says', async () =>
  // The hub takes sites' leaf servers too, so that the nodes' leaf logins are in its configuration.
  withIsolatedMesh(
    { nodes: [A, B, ...Object.values(NAMESAKES)], providers: [PROVIDER], archives: 'object', leaf: { listen: `127.0.0.1:${await freePort()}` } },
    async (m) => {
      const c = await matrixContext(m);
      const lines: MatrixLine[] = [];
      const wrong: string[] = [];
      for (const row of [...ROWS, ...STREAM_ROWS, ...PROVIDER_ROWS, ...LIVENESS_ROWS]) {
        const observed = await row.run(c).catch((err: Error) => ({ verdict: 'error', how: err.message }));
        lines.push({ actor: row.actor, action: row.action, expected: row.expected, observed: `${observed.verdict}: ${observed.how}` });
        if (observed.verdict !== row.expected)
          wrong.push(`${row.actor}: ${row.action}: expected ${row.expected}, observed ${observed.verdict}: ${observed.how}`);
      }
      console.log(`\n${renderTable(lines)}\n`);
      assert.equal(wrong, [], `rows that did not come out as expected:\n${wrong.join('\n')}`);
      const differs = checkIsolationDoc(lines, process.env['UPDATE_DOCS'] === '1');
      assert.not.ok(differs, differs);
      // The product itself did nothing its grants refuse: every violation logged is a probe's.
      const product = m.violations().filter((l) => /nats\.js:(mesh-provisioner|node-provisioner)/.test(l));
      assert.equal(product, [], 'the seat and the clients were refused nothing');
    },
  ));

/** The observed column of docs/isolation.md, by action. */
function committedObserved(): Map<string, string> {
  const rows = readFileSync(ISOLATION_DOC, 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('| '))
    .map((l) => l.slice(2, -2).split(' | '));
  return new Map(rows.map((cells) => [cells[1]!, cells[3]!]));
}

test('each row of issue 18 that a grant refuses comes out otherwise once that grant is wider', () =>
  withIsolatedMesh({ nodes: [A, B, ...Object.values(NAMESAKES)], providers: [PROVIDER], archives: 'object', edit: widenGrants, initNodes: 200 }, async (m) => {
    const c = await matrixContext(m);
    const committed = committedObserved();
    const same: string[] = [];
    for (const row of GRANT_ROWS) {
      const observed = await row.run(c).catch((err: Error) => ({ verdict: 'error', how: err.message }));
      const line = `${observed.verdict}: ${observed.how}`;
      if (!committed.has(row.action)) throw new Error(`docs/isolation.md has no row "${row.action}"`);
      if (line === committed.get(row.action)) same.push(`${row.actor}: ${row.action}: still ${line}`);
    }
    assert.equal(same, [], `rows that did not flip:\n${same.join('\n')}`);
  }));

test('with the seat’s bundle logged in as provisioner, a node fills a module from a file:// archive, records its needs and follows a change; the seat composes a new assignment and answers `query` run with its login', () =>
  withIsolatedMesh({ nodes: [A, B], archives: 'file', seat: 'process' }, async (m) => {
    await m.kv.config.put(`${A}.${MODULE}.level`, 'info');
    await m.publish(MODULE, WEB);
    await m.assign(A, MODULE);
    const na = await startApplied(m, A, 'info');
    const need = await m.kv.needs.get(needKey(A, MODULE, 'config', 'level'));
    assert.is((need?.json() as { met?: boolean } | undefined)?.met, true, 'the config need recorded, met');
    assert.is((await m.kv.needs.get(needKey(A, MODULE, 'port', 'http')))?.operation, 'PUT', 'the placement need recorded');

    await m.kv.config.put(`${A}.${MODULE}.level`, 'debug');
    await waitFor('the changed value on disk', () => na.moduleFile(MODULE) === expected('debug'));
    await m.waitReport(A, MODULE, (r) => r.state === 'applied');

    await m.assign(B, MODULE);
    await waitFor('the seat’s plan of the new assignment', async () => (await m.kv.plans.get(`${B}.${MODULE}`))?.operation === 'PUT');
    const query = await m.serverCommand(USERS.seat, ['query', 'applied', '--node', A, '--json']);
    assert.is(query.code, 0, query.stderr);
    const answer = JSON.parse(query.stdout) as { entries: { key: string; value: { state: string } }[] };
    assert.equal(
      answer.entries.map((e) => [e.key, e.value.state]),
      [[`${A}.${MODULE}`, 'applied']],
    );

    await na.idle();
    const said = [...na.log.lines, m.seatSaid()].join('\n');
    assert.not.match(said, / error /, `an error said: ${said}`);
    assert.equal(m.violations(), [], 'nothing the seat or the client did was refused');
  }));

test('after nats-server restarts, with its consumers kept and then lost, a node follows new values and the seat composes, under their grants', () =>
  withIsolatedMesh({ nodes: [A, B], archives: 'file', seat: 'process' }, async (m) => {
    await m.kv.config.put(`${A}.${MODULE}.level`, 'info');
    await m.publish(MODULE, WEB);
    await m.assign(A, MODULE);
    const na = await startApplied(m, A, 'info');
    const jsm = await jetstreamManager(m.admin);
    const naConsumers = async () => {
      const names: string[] = [];
      for await (const c of jsm.consumers.list(`KV_${CONFIG}`)) if (c.config.filter_subject === `$KV.${CONFIG}.${A}.>` && c.push_bound) names.push(c.name);
      return names;
    };
    const first = await naConsumers();
    assert.is(first.length, 1, `one bound consumer of na's values: ${first}`);
    const jetStreamBack = () =>
      waitFor('JetStream back for admin', async () => (await m.kv.config.get(`${A}.${MODULE}.level`).catch(() => null)) !== null, RECOVERY_MS);
    const follows = async (level: string, why: string) => {
      await m.kv.config.put(`${A}.${MODULE}.level`, level);
      await waitFor(`the value put ${why} on disk`, () => na.moduleFile(MODULE) === expected(level), RECOVERY_MS).catch((err: Error) => {
        throw new Error(`${err.message}; na's log: ${na.log.lines.slice(-15).join(' | ')}`);
      });
    };

    // nats-server 2.9.10 keeps the ephemeral consumers in its store: the watches resume on them.
    await m.nats.stop();
    await m.nats.restart();
    await waitFor('na back on the bus', () => na.log.lines.some((l) => l.includes('bus back: filling 1 module(s) again')), RECOVERY_MS);
    await jetStreamBack();
    await follows('after-restart', 'after the restart');

    // A server that comes back without them (a lost store, another cluster member): both programs
    // create them again, by the named, filtered subject their grants allow.
    await m.nats.stop();
    const streams = join(m.nats.dir, 'js', 'jetstream', 'MESH', 'streams');
    assert.ok(existsSync(join(streams, `KV_${CONFIG}`, 'obs')), 'the consumers of na’s values are in the store');
    for (const stream of readdirSync(streams)) rmSync(join(streams, stream, 'obs'), { recursive: true, force: true });
    await m.nats.restart();
    await jetStreamBack();
    await follows('after-loss', 'after the loss');
    const again = await naConsumers();
    assert.is(again.length, 1, `one bound consumer of na's values again: ${again}`);
    assert.is.not(again[0], first[0], 'created again');
    await m.assign(B, MODULE);
    await waitFor(
      'the seat’s plan of an assignment made after the loss',
      async () => (await m.kv.plans.get(`${B}.${MODULE}`))?.operation === 'PUT',
      RECOVERY_MS,
    );
    await m.waitReport(A, MODULE, (r) => r.state === 'applied');
    assert.equal(m.violations(), [], 'nothing the seat or the client did was refused');
  }));

test.run();
