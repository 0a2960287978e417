// The input commands of DESIGN §13 — `assign`, `unassign`, `config set|get|rm|import` — run as the
// seat's bundle on the bus `bus-config` generates, logged in as admin (as an operator runs them), and
// what a node's client and engine make of what they write; refusals write nothing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KV } from '@nats-io/kv';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { ensureBuilt, ROOT } from './helpers/bundle.ts';
import { startMeshBus, withIsolatedMesh, type IsolatedMesh } from './helpers/isolated-mesh.ts';
import { jetstreamManager } from '@nats-io/jetstream';
import { nodePaths, readIfExists } from './helpers/mesh-node.ts';
import type { ModuleSpec } from './helpers/archive.ts';
import { waitFor } from './helpers/wait.ts';
import { tempDir } from './helpers/temp.ts';

/** What a run of the bundle gave: stdout as bytes (a value is compared byte for byte). */
type Ran = { code: number | null; stdout: Buffer; stderr: string };

/** Runs `node dist/server.js <args…>` on the mesh as `user`, `stdin` written to it. */
function server(m: Pick<IsolatedMesh, 'nats' | 'nkey'>, user: string, args: string[], stdin?: string | Uint8Array): Promise<Ran> {
  ensureBuilt('server');
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'server.js'), ...args, '--nats', m.nats.url, '--nkey', m.nkey(user)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  let err = '';
  child.stdout.on('data', (d: Buffer) => out.push(d));
  child.stderr.on('data', (d: Buffer) => (err += String(d)));
  child.stdin.end(stdin ?? '');
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout: Buffer.concat(out), stderr: err })));
}

const admin = (m: Pick<IsolatedMesh, 'nats' | 'nkey'>, args: string[], stdin?: string | Uint8Array) => server(m, USERS.admin, args, stdin);
const linesOf = (text: string | Buffer) =>
  String(text)
    .split('\n')
    .filter((l) => l !== '');

/** A value a template must get byte for byte: a newline, non-ASCII and placeholder text that stays text. */
const TRICKY = 'db-1.internal\n# café ☕ ${secret:api-key} $${x} ${config:other}';

const WEB: ModuleSpec = {
  templates: { 'web.conf': 'port=${port:http}\nhost=${config:db.host}\ntag=${config:shell:zsh}\n' },
  provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf', mode: 'owned', change: 'restart' }] },
};

/** The journal's restarts of `module` on `node`. */
function restarts(m: IsolatedMesh, node: string, module: string): number {
  const journal = readIfExists(nodePaths(join(m.dir, node)).journalFile) ?? '';
  return journal.split('\n').filter((l) => l.endsWith(` restart ${module}`)).length;
}

/** Whether `key` holds a value (not deleted, not missing). */
async function holds(kv: KV, key: string): Promise<boolean> {
  return (await kv.get(key))?.operation === 'PUT';
}

test('assign, config set, get, rm and unassign as admin: the node applies the placement given, the file follows each value, and the plan retires', () =>
  withIsolatedMesh({ nodes: ['n1'] }, async (m) => {
    const n1 = m.node('n1');
    await n1.startEngine();
    await n1.startClient();
    await m.publish('web', WEB);
    const dir = join(n1.root, 'srv', 'web, the site');
    const file = join(dir, 'web.conf');

    const set = await admin(m, ['config', 'set', 'n1', 'web', 'db.host', TRICKY]);
    assert.is(set.code, 0, set.stderr);
    assert.equal(linesOf(set.stdout), [`set n1 web db.host: mesh-config_resolved:n1.web.db.host rev 1, ${Buffer.byteLength(TRICKY)} bytes`]);
    // A key out of the plain characters is encoded (DESIGN §2), and the client reads it back by its name.
    const encoded = await admin(m, ['config', 'set', 'n1', 'web', 'shell:zsh', 'café']);
    assert.equal(linesOf(encoded.stdout), ['set n1 web shell:zsh: mesh-config_resolved:n1.web.shell=3Azsh rev 2, 5 bytes']);
    const assigned = await admin(m, ['assign', 'n1', 'web', '--dir', `config=${dir}`, '--port', 'http=8081']);
    assert.is(assigned.code, 0, assigned.stderr);
    assert.is(assigned.stderr, '', 'a published module: no warning');
    assert.is(linesOf(assigned.stdout).length, 1);
    assert.match(
      String(assigned.stdout),
      /^assigned web to n1, placement \{"dir":\{"config":".*web, the site"\},"port":\{"http":8081\}\} \(mesh-controller_assignments n1\.web, revision \d+\)\n$/,
    );
    await m.waitReport('n1', 'web', (r) => r.state === 'applied');
    assert.is(readFileSync(file, 'utf8'), `port=8081\nhost=${TRICKY}\ntag=café\n`, 'the file where --dir says, the value byte for byte');

    const again = await admin(m, ['assign', 'n1', 'web', '--dir', `config=${dir}`, '--port', 'http=8081']);
    assert.match(String(again.stdout), /unchanged/);

    const get = await admin(m, ['config', 'get', 'n1', 'web', 'db.host']);
    assert.is(get.code, 0, get.stderr);
    assert.ok(get.stdout.equals(Buffer.from(TRICKY)), `config get is byte-exact: ${JSON.stringify(String(get.stdout))}`);

    const changed = await admin(m, ['config', 'set', 'n1', 'web', 'db.host', '-'], 'db-2\n');
    assert.is(changed.code, 0, changed.stderr);
    await waitFor('the file to follow the new value', () => readIfExists(file) === 'port=8081\nhost=db-2\n\ntag=café\n');
    assert.ok((await admin(m, ['config', 'get', 'n1', 'web', 'db.host'])).stdout.equals(Buffer.from('db-2\n')), 'a value from stdin is its bytes');

    assert.is((await admin(m, ['config', 'set', 'n1', 'web', 'a.b', TRICKY])).code, 0);
    const listed = await admin(m, ['config', 'get', 'n1', 'web']);
    assert.is(listed.code, 0, listed.stderr);
    const shown = TRICKY.replace('\n', '\\x0a');
    assert.equal(
      linesOf(listed.stdout),
      [`a.b=${shown}`, 'db.host=db-2\\x0a', 'shell:zsh=café'],
      'every key one line, in key order, control characters escaped',
    );

    const rm = await admin(m, ['config', 'rm', 'n1', 'web', 'db.host']);
    assert.is(rm.code, 0, rm.stderr);
    const waiting = await m.waitReport('n1', 'web', (r) => r.state === 'waiting');
    assert.equal(
      waiting.waiting.map((w) => `${w.kind}:${w.name}`),
      ['config:db.host'],
    );
    const missing = await admin(m, ['config', 'get', 'n1', 'web', 'db.host']);
    assert.is(missing.code, 1);
    assert.is(missing.stdout.length, 0);
    assert.equal(linesOf(missing.stderr), ['mesh-provisioner: n1 web db.host (mesh-config_resolved n1.web.db.host) holds no value']);
    assert.is((await admin(m, ['config', 'rm', 'n1', 'web', 'db.host'])).code, 1, 'a key already removed: exit 1');

    const unassigned = await admin(m, ['unassign', 'n1', 'web']);
    assert.is(unassigned.code, 0, unassigned.stderr);
    await waitFor('the plan retired', async () => !(await holds(m.kv.plans, 'n1.web')));
    const twice = await admin(m, ['unassign', 'n1', 'web']);
    assert.is(twice.code, 1);
    assert.equal(linesOf(twice.stderr), ['mesh-provisioner: web is not assigned to n1: nothing to delete (mesh-controller_assignments n1.web)']);
  }));

test('config import of 200 keys over 3 modules: checked whole, written in one burst, every file right', () =>
  withIsolatedMesh({ nodes: ['n1'] }, async (m) => {
    const n1 = m.node('n1');
    await n1.startEngine();
    await n1.startClient();
    const counts = { alpha: 70, beta: 70, gamma: 60 };
    const keysOf = (module: string) => Array.from({ length: counts[module as keyof typeof counts] }, (_, i) => `k.${i}`);
    for (const module of Object.keys(counts)) {
      const lines = keysOf(module).map((k) => `${k}=\${config:${k}}`);
      await m.publish(module, {
        templates: { 'app.conf': lines.join('\n') + '\n' },
        provisioning: { files: [{ path: '${dir:config}/app.conf', template: 'app.conf', mode: 'owned', change: 'restart' }] },
      });
      const assigned = await admin(m, ['assign', 'n1', module, '--dir', `config=${join(n1.root, module)}`]);
      assert.is(assigned.code, 0, assigned.stderr);
    }
    const values = (round: string) =>
      Object.fromEntries(Object.keys(counts).map((module) => [module, Object.fromEntries(keysOf(module).map((k) => [k, `${module} ${k} ${round} é\nx`]))]));
    const expected = (module: string, round: string) =>
      keysOf(module)
        .map((k) => `${k}=${module} ${k} ${round} é\nx`)
        .join('\n') + '\n';
    const work = tempDir('mesh-import-');
    try {
      writeFileSync(join(work, 'config.json'), JSON.stringify({ n1: values('one') }));
      const imported = await admin(m, ['config', 'import', join(work, 'config.json')]);
      assert.is(imported.code, 0, imported.stderr);
      assert.equal(linesOf(imported.stdout), [
        'imported 70 keys of n1 alpha',
        'imported 70 keys of n1 beta',
        'imported 60 keys of n1 gamma',
        'imported 200 keys (3 modules on 1 node) into mesh-config_resolved in one burst',
      ]);
      for (const module of Object.keys(counts)) {
        await m.waitReport('n1', module, (r) => r.state === 'applied');
        assert.is(readIfExists(join(n1.root, module, 'app.conf')), expected(module, 'one'), module);
        assert.is(restarts(m, 'n1', module), 1, `${module} restarted once`);
      }

      // Again from stdin, every value changed: every file follows.
      const second = await admin(m, ['config', 'import', '-'], JSON.stringify({ n1: values('two') }));
      assert.is(second.code, 0, second.stderr);
      for (const module of Object.keys(counts)) {
        await waitFor(`${module} with the second values`, () => readIfExists(join(n1.root, module, 'app.conf')) === expected(module, 'two'));
      }
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  }));

/** Refusals: each exits 2 with one line on stderr naming what is wrong, and writes nothing. */
const REFUSED: [what: string, args: string[], line: RegExp, stdin?: string][] = [
  ['a node name out of its grammar', ['assign', 'N1', 'web'], /^assign: node "N1" is not a valid name \(a-z, 0-9 and -, at most 63\)$/],
  ['a module name out of its grammar', ['config', 'set', 'n1', 'web_1', 'k', 'v'], /^config set: module "web_1" is not a valid name/],
  ['--port 70000', ['assign', 'n1', 'web', '--port', 'http=70000'], /^--port http: "70000" is not a port number 1–65535$/],
  ['a relative --dir', ['assign', 'n1', 'web', '--dir', 'config=etc/web'], /^--dir config: "etc\/web" is not absolute$/],
  ['a --dir with a .. segment', ['assign', 'n1', 'web', '--dir', 'config=/etc/../root'], /^--dir config: .* holds a \. or \.\. segment$/],
  ['a placement name given twice', ['assign', 'n1', 'web', '--port', 'http=80', '--port', 'http=81'], /^--port: "http" is given twice$/],
  ['a placement item without =', ['assign', 'n1', 'web', '--seat', 'rack'], /^--seat: "rack" is not NAME=VALUE$/],
  [
    'a config key past the token limit',
    ['config', 'set', 'n1', 'web', 'k'.repeat(256), 'v'],
    /^config set: config key "k+…" is 256 bytes, past the limit of 255 bytes$/,
  ],
  [
    'a config key past the KV key limit',
    ['config', 'set', 'n1', 'web', Array(6).fill('k'.repeat(200)).join('.'), 'v'],
    /the bus key is \d+ bytes, past the limit of 1024 bytes$/,
  ],
  ['a config key with whitespace', ['config', 'set', 'n1', 'web', 'db host', 'v'], /^config set: config key "db host" is not a name/],
  ['a config key with an empty part', ['config', 'rm', 'n1', 'web', 'db..host'], /^config rm: config key "db\.\.host" has an empty part between dots$/],
  ['a value from stdin that is not UTF-8', ['config', 'set', 'n1', 'web', 'k', '-'], /^config set: the value read from stdin is not UTF-8 text$/, '\xff'],
  ['import of a file that is not JSON', ['config', 'import', '-'], /^the import file is not JSON/, '{"n1": {"web": '],
  [
    'import of a file of several lines that is not JSON: the line and column said',
    ['config', 'import', '-'],
    /^the import file is not JSON: .* at position 16 \(line 3, column 5\)$/,
    '{\n  "n1": {\n    web: {}\n  }\n}',
  ],
  [
    'import of a value that is not a string',
    ['config', 'import', '-'],
    /^the import file's field "n1\.web\.port" is not a string/,
    '{"n1":{"web":{"port":8080}}}',
  ],
  [
    'import of a bad node name',
    ['config', 'import', '-'],
    /^the import file's field "N1" is refused: node "N1" is not a valid name/,
    '{"N1":{"web":{"k":"v"}}}',
  ],
  [
    'import with one key past the limits among good ones',
    ['config', 'import', '-'],
    /is 300 bytes, past the limit of 255 bytes$/,
    JSON.stringify({ n1: { web: { a: 'x', ['k'.repeat(300)]: 'y' } } }),
  ],
  ['a config action that does not exist', ['config', 'put', 'n1', 'web', 'k', 'v'], /^config needs set, get, rm or import, got "put"/],
  ['config set without its value', ['config', 'set', 'n1', 'web', 'k'], /^config set NODE MODULE KEY VALUE: only "n1" "web" "k" given$/],
];

test('refusals exit 2 with one line naming what is wrong, and write nothing', () =>
  withIsolatedMesh({ nodes: ['n1'] }, async (m) => {
    for (const [what, args, line, stdin] of REFUSED) {
      const ran = await admin(m, args, stdin === '\xff' ? Buffer.from([0xff, 0x0a]) : stdin);
      assert.is(ran.code, 2, `${what}: exit ${ran.code}: ${ran.stderr}`);
      assert.is(ran.stdout.length, 0, `${what}: nothing on stdout`);
      const said = linesOf(ran.stderr);
      assert.is(said.length, 1, `${what}: one line: ${ran.stderr}`);
      assert.match(said[0]!.replace(/^mesh-provisioner: /, ''), line, what);
    }
    for (const [bucket, kv] of [
      ['assignments', m.kv.assignments],
      ['config', m.kv.config],
    ] as const) {
      const keys = [];
      for await (const key of await kv.keys()) keys.push(key);
      assert.equal(keys, [], `nothing written to ${bucket}`);
    }
  }));

test('with the seat’s or a node’s login the input commands are refused in one line that names the admin login, and nothing is written', () =>
  withIsolatedMesh({ nodes: ['n1'] }, async (m) => {
    for (const user of [USERS.seat, USERS.client('n1')]) {
      for (const args of [
        ['assign', 'n1', 'web', '--port', 'http=80'],
        ['unassign', 'n1', 'web'],
        ['config', 'set', 'n1', 'web', 'k', 'v'],
        ['config', 'get', 'n1', 'web'],
        ['config', 'import', '-'],
      ]) {
        const ran = await server(m, user, args, '{"n1":{"web":{"k":"v"}}}');
        const name = `${user}: ${args.join(' ')}`;
        assert.is(ran.code, 1, `${name}: exit ${ran.code}: ${ran.stderr}`);
        const said = linesOf(ran.stderr);
        assert.is(said.length, 1, `${name}: one line: ${ran.stderr}`);
        assert.match(
          said[0]!,
          /^mesh-provisioner: this login may not write mesh-(controller_assignments|config_resolved): the input commands need the admin login \(its seed, admin\.nk, as --nkey\); the bus said: Permissions Violation/,
          name,
        );
      }
    }
    assert.is(await holds(m.kv.assignments, 'n1.web'), false);
    assert.is(await holds(m.kv.config, 'n1.web.k'), false);
  }));

test('on the generated bus before init, every input command refuses its missing bucket, says to run init first, and makes no stream; after init they write, assign warning of a module never published', async () => {
  const bus = await startMeshBus({ nodes: ['n1'] });
  try {
    const dir = tempDir('mesh-before-init-');
    const file = (name: string, text: string) => (writeFileSync(join(dir, name), text), join(dir, name));
    const templates = join(dir, 'templates');
    mkdirSync(templates);
    file('templates/web.conf', 'level ${config:level}\n');
    const composition = file('composition.json', JSON.stringify({ module: 'web', build: '1', provisioning: { files: [] } }));
    const imported = file('import.json', '{"n1":{"web":{"level":"info"}}}');
    try {
      for (const [args, bucket] of [
        [['assign', 'n1', 'web', '--port', 'http=80'], 'mesh-controller_assignments'],
        [['unassign', 'n1', 'web'], 'mesh-controller_assignments'],
        [['config', 'set', 'n1', 'web', 'level', 'info'], 'mesh-config_resolved'],
        [['config', 'get', 'n1', 'web', 'level'], 'mesh-config_resolved'],
        [['config', 'rm', 'n1', 'web', 'level'], 'mesh-config_resolved'],
        [['config', 'import', imported], 'mesh-config_resolved'],
        [['publish', templates, '--composition', composition], 'mesh-catalog_archives'],
      ] as const) {
        const ran = await admin(bus, [...args]);
        assert.is(ran.code, 1, `${args.join(' ')}: exit ${ran.code}: ${ran.stderr}`);
        const said = linesOf(ran.stderr);
        assert.is(said.length, 1, `${args.join(' ')}: one line: ${ran.stderr}`);
        assert.match(said[0]!, new RegExp(`bucket ${bucket} is missing: run \`server\.js init\` with the admin login first`), args.join(' '));
      }
      const streams = [];
      for await (const s of (await jetstreamManager(bus.admin)).streams.list()) streams.push(s.config.name);
      assert.equal(streams, [], 'no stream made by an input command');
      const init = await admin(bus, ['init', '--nodes', '1']);
      assert.is(init.code, 0, init.stderr);
      // A module never published is assigned all the same, with a warning (issue 31 item 18).
      const assigned = await admin(bus, ['assign', 'n1', 'web', '--port', 'http=80']);
      assert.is(assigned.code, 0, assigned.stderr);
      assert.match(String(assigned.stdout), /^assigned web to n1/);
      assert.equal(linesOf(assigned.stderr), [
        'mesh-provisioner: warning: module web was never published (mesh-catalog_modules holds no web): the seat holds its plans until `server.js publish` puts it',
      ]);
      const published = await admin(bus, ['publish', templates, '--composition', composition]);
      assert.is(published.code, 0, published.stderr);
      const again = await admin(bus, ['assign', 'n1', 'web', '--port', 'http=81']);
      assert.equal([again.code, again.stderr], [0, ''], 'published: no warning');
      writeFileSync(composition, JSON.stringify({ module: 'web', build: '2', published: false, provisioning: { files: [] } }));
      assert.is((await admin(bus, ['publish', templates, '--composition', composition])).code, 0);
      const unpublished = await admin(bus, ['assign', 'n1', 'web', '--port', 'http=82']);
      assert.is(unpublished.code, 0, unpublished.stderr);
      assert.equal(linesOf(unpublished.stderr), [
        'mesh-provisioner: warning: module web build 2 is not published yet (mesh-catalog_modules web: published false): the seat holds its plans until it is',
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  } finally {
    await bus.close();
  }
});

test.run();
