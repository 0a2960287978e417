// --dry-run DIR (issue 14): the client bundle renders every module of its node from the bus into
// DIR — each file at DIR + its path, secrets as `${secret:<name>}`, a summary — and exits 0 only
// when all rendered completely; it never connects to the engine and writes nothing to the bus.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type Server } from 'node:net';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KV } from '@nats-io/kv';
import { openKv } from '../src/shared/bus/bus.ts';
import { APPLIED, COLLECT, NEEDS } from '../src/shared/contract/buckets.ts';
import { contentDigest } from '../src/shared/contract/fill-protocol.ts';
import type { DryRunSummary } from '../src/client/commands/dry-run/output.ts';
import { cleanupBundles, ensureBuilt, ROOT, startBundle } from './helpers/bundle.ts';
import { withMesh, type Mesh } from './helpers/mesh.ts';
import { waitFor } from './helpers/wait.ts';

test.after(() => cleanupBundles());
test.before(() => ensureBuilt('client'));

const WEB = {
  templates: {
    'web.conf': 'listen ${port:http}\nhost ${config:db.host}\nkey ${secret:api-key}\n# keep ${HOME} and $${config:x}\n',
    'web.zsh': 'export WEB_PORT=${port:http}\n',
  },
  provisioning: {
    files: [{ path: '${dir:config}/web.conf', template: 'web.conf', mode: 'owned', change: 'restart', owner: 'web', fileMode: '0640' }],
    secrets: [{ name: 'api-key' }, { name: 'tls-key', path: '${dir:config}/tls.key' }],
    items: [{ collection: 'shell:zsh:normal', template: 'web.zsh' }],
  },
};

/** Publishes and assigns a module and waits for its plan. */
async function place(m: Mesh, module: string, spec: Parameters<Mesh['publish']>[1]): Promise<void> {
  await m.publish(module, spec);
  await m.assign('n1', module);
  await waitFor(`plan n1.${module}`, async () => (await m.kv.plans.get(`n1.${module}`))?.operation === 'PUT');
}

/** A unix socket that only counts who connects to it: an engine that must see nothing. */
async function fakeEngine(path: string): Promise<{ connections(): number; close(): Promise<void> }> {
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  // A failed assertion must not leave the suite's process held open by it.
  server.unref();
  return { connections: () => connections, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Runs the client bundle of n1 with `args`, the engine socket named only by the environment. */
async function client(m: Mesh, args: string[], socket: string) {
  const running = startBundle(
    'node',
    join(ROOT, 'dist'),
    'client',
    ['--node', 'n1', '--nats', m.nats.url, '--cache', m.cacheDir, '--archive-dir', m.archiveDir, ...args],
    { MESH_FILL_SOCKET: socket },
  );
  const { code } = await running.exited;
  return { code, stdout: running.stdout(), stderr: running.stderr() };
}

async function keysOf(kv: KV): Promise<string[]> {
  const keys: string[] = [];
  for await (const key of await kv.keys()) keys.push(key);
  return keys;
}

test('--dry-run writes each file at DIR + its path with secrets as text, and a summary, touching neither the engine nor the bus', () =>
  withMesh(
    async (m) => {
      await m.setConfig('n1', 'web', 'db.host', 'db.internal');
      await place(m, 'web', WEB);
      const engine = await fakeEngine(join(m.dir, 'fake.sock'));
      const published: string[] = [];
      const sub = m.nc.subscribe('prov.>', { callback: (_e, msg) => void published.push(msg.subject) });
      const dir = join(m.dir, 'dry');
      const run = await client(m, ['--dry-run', dir, '--timeout', '20'], join(m.dir, 'fake.sock'));
      assert.is(run.code, 0, run.stderr);

      const conf = join(m.root, 'etc', 'web', 'web.conf');
      const text = readFileSync(join(dir, conf), 'utf8');
      assert.is(text, 'listen 8080\nhost db.internal\nkey ${secret:api-key}\n# keep ${HOME} and ${config:x}\n');
      assert.is(readFileSync(join(dir, m.root, 'etc', 'web', 'tls.key'), 'utf8'), '${secret:tls-key}');
      const summary = JSON.parse(readFileSync(join(dir, 'mesh-dry-run.json'), 'utf8')) as DryRunSummary;
      assert.is(summary.complete, true);
      const web = summary.modules.find((x) => x.module === 'web')!;
      assert.is(web.state, 'complete');
      const listed = web.files.find((f) => f.path === conf)!;
      assert.equal(listed, {
        path: conf,
        mode: 'owned',
        change: 'restart',
        owner: 'web',
        fileMode: '0640',
        digest: contentDigest(text),
        secrets: ['api-key'],
        written: conf.slice(1),
      });
      assert.equal(
        web.items.map((i) => [i.collection, i.content]),
        [['shell:zsh:normal', 'export WEB_PORT=8080\n']],
      );
      assert.match(run.stdout, /web \(build 1\): complete, 2 file\(s\), 1 item\(s\)/);

      await m.nc.flush();
      assert.is(engine.connections(), 0, 'the engine socket was connected to');
      assert.equal(published, [], 'published on prov.>');
      const [needs, applied, collect] = await Promise.all([NEEDS, APPLIED, COLLECT].map((b) => openKv(m.nc, b)));
      assert.equal(await keysOf(needs!), []);
      assert.equal(await keysOf(applied!), []);
      assert.equal(await keysOf(collect!), []);

      // The same run with --once does reach that socket and the bus: what the checks above would catch.
      const control = await client(m, ['--once', '--timeout', '2'], join(m.dir, 'fake.sock'));
      assert.is(control.code, 1);
      assert.ok(engine.connections() > 0, 'the control run never reached the fake engine');
      assert.ok((await keysOf(needs!)).length > 0, 'the control run wrote no needs');
      sub.unsubscribe();
      await engine.close();
    },
    { engine: false },
  ));

test('--dry-run exits 1 listing what a module waits for and why another failed, writing the files that are complete', () =>
  withMesh(
    async (m) => {
      await place(m, 'wait', {
        templates: { 'a.conf': 'a=${port:http}\n', 'b.conf': 'b=${config:missing}\n' },
        provisioning: {
          files: [
            { path: '${dir:config}/a.conf', template: 'a.conf' },
            { path: '${dir:config}/b.conf', template: 'b.conf' },
          ],
        },
      });
      await place(m, 'bad', { templates: { 'x.conf': 'x=${nope:y}\n' }, provisioning: { files: [{ path: '${dir:config}/x.conf', template: 'x.conf' }] } });
      const dir = join(m.dir, 'dry');
      const started = Date.now();
      const run = await client(m, ['--dry-run', dir, '--timeout', '2'], join(m.dir, 'absent.sock'));
      assert.is(run.code, 1, run.stderr);
      assert.ok(Date.now() - started >= 2000, 'a waiting module ends the run only at the timeout');
      assert.is(readFileSync(join(dir, m.root, 'etc', 'wait', 'a.conf'), 'utf8'), 'a=8080\n');
      assert.not.ok(existsSync(join(dir, m.root, 'etc', 'wait', 'b.conf')));
      const summary = JSON.parse(readFileSync(join(dir, 'mesh-dry-run.json'), 'utf8')) as DryRunSummary;
      assert.is(summary.complete, false);
      assert.is(summary.timedOut, true);
      const wait = summary.modules.find((x) => x.module === 'wait')!;
      assert.is(wait.state, 'waiting');
      assert.equal(wait.waiting, [{ kind: 'config', name: 'missing', files: [join(m.root, 'etc', 'wait', 'b.conf')] }]);
      const bad = summary.modules.find((x) => x.module === 'bad')!;
      assert.is(bad.state, 'failed');
      assert.match(bad.reason ?? '', /unknown kind "nope" \(write \$\$\{nope:y\} to keep it as text\)/);
      assert.match(run.stdout, /wait \(build 1\): waiting for config:missing/);
      assert.match(run.stdout, /bad \(build 1\): failed: template x\.conf line 1/);
      assert.not.ok(existsSync(join(m.dir, 'absent.sock')));
    },
    { engine: false },
  ));

test('--dry-run shows the mode the engine gives a file: its fileMode, 0600 when it holds a secret, its own when managed, else 0644', () =>
  withMesh(
    async (m) => {
      await place(m, 'sec', {
        templates: { 's.env': 'token=${secret:tok}\n', 'p.conf': 'plain\n', 'm.conf': 'managed\n', 'k.env': 'key=${secret:tok}\n' },
        provisioning: {
          files: [
            { path: '${dir:config}/s.env', template: 's.env' },
            { path: '${dir:config}/p.conf', template: 'p.conf' },
            { path: '${dir:config}/m.conf', template: 'm.conf', mode: 'managed' },
            { path: '${dir:config}/k.env', template: 'k.env', fileMode: '0640' },
          ],
          secrets: [{ name: 'tok' }],
        },
      });
      const run = await client(m, ['--dry-run', join(m.dir, 'dry'), '--timeout', '20'], join(m.dir, 'absent.sock'));
      assert.is(run.code, 0, run.stderr);
      const shown = (file: string) => run.stdout.split('\n').find((l) => l.startsWith(`  ${join(m.root, 'etc', 'sec', file)}  `)) ?? run.stdout;
      assert.match(shown('s.env'), /^ {2}\S+ {2}owned none 0600 \(holds a secret\) sha256:/);
      assert.match(shown('p.conf'), /^ {2}\S+ {2}owned none 0644 \(default\) sha256:/);
      assert.match(shown('m.conf'), /^ {2}\S+ {2}managed none its own \(0644 when new\) sha256:/);
      assert.match(shown('k.env'), /^ {2}\S+ {2}owned none 0640 sha256:/);
    },
    { engine: false },
  ));

test('--dry-run refuses a DIR that holds anything, before it connects, and writes nothing there', () =>
  withMesh(
    async (m) => {
      const dir = join(m.dir, 'full');
      mkdirSync(dir);
      writeFileSync(join(dir, 'keep'), 'mine');
      const run = await client(m, ['--dry-run', dir], join(m.dir, 'absent.sock'));
      assert.is(run.code, 2);
      assert.match(run.stderr, /--dry-run: .*full is not empty/);
      assert.equal(readdirSync(dir), ['keep']);
    },
    { engine: false },
  ));

test.run();
