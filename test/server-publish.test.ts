// `node dist/server.js publish` (issue 20 items 1 and 6, DESIGN §13), run as the bundle with the
// admin login on the generated bus: a DIR packed the same way every time, an ARCHIVE taken as it
// is, `--build`, `--dry-run`, and every refusal — said in one line each, with nothing written.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { DEFAULT_ARCHIVES } from '../src/shared/contract/buckets.ts';
import { DEFAULT_ARCHIVE_LIMITS } from '../src/module/archive-limits.ts';
import { unpackArchive } from '../src/module/untar.ts';
import { jetstreamManager } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import { bucketProblems, kvBucket, objBucket, streamOf } from '../src/shared/contract/bucket-spec.ts';
import { connectBus, openKv } from '../src/shared/bus/bus.ts';
import { MODULES } from '../src/shared/contract/buckets.ts';
import { packTemplates } from './helpers/archive.ts';
import { ensureBuilt, ROOT, runBundle } from './helpers/bundle.ts';
import { startNats } from './helpers/nats.ts';
import { withIsolatedMesh, type IsolatedMesh } from './helpers/isolated-mesh.ts';
import { tempDir as newTempDir } from './helpers/temp.ts';

const dirs: string[] = [];
test.after(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = newTempDir('mesh-publish-');
  dirs.push(dir);
  return dir;
}

const WEB_CONF = 'listen ${port:http}\nlevel ${config:level}\n';
const webFile = { path: '${dir:config}/web.conf', template: 'web.conf', mode: 'owned', change: 'restart' };

/** A module directory holding `templates`, and a composition file for `module` with `provisioning` and `more` fields. */
function moduleFiles(module: string, templates: Record<string, string>, provisioning: Record<string, unknown>, more: Record<string, unknown> = {}) {
  const dir = tempDir();
  const src = join(dir, 'src');
  mkdirSync(src);
  for (const [name, text] of Object.entries(templates)) {
    mkdirSync(join(src, name, '..'), { recursive: true });
    writeFileSync(join(src, name), text);
  }
  const composition = join(dir, 'composition.json');
  writeFileSync(composition, JSON.stringify({ module, build: '1', provisioning, ...more }));
  return { dir, src, composition };
}

type Stored = { build: string; published: boolean; archive: { ref: string; digest: string } };

async function stored(m: IsolatedMesh, module: string): Promise<Stored | undefined> {
  const entry = await m.kv.modules.get(module);
  return entry === null || entry.operation !== 'PUT' ? undefined : (entry.json() as Stored);
}

async function archiveBytes(m: IsolatedMesh, name: string): Promise<Uint8Array | null> {
  return m.kv.archives.getBlob(name);
}

const sha256 = (bytes: Uint8Array) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

test('publish of a DIR as admin: a node applies it; the same DIR gives the same digest; --build; an ARCHIVE as it is', async () => {
  await withIsolatedMesh({ nodes: ['n1'] }, async (m) => {
    const { dir, src, composition } = moduleFiles('web', { 'web.conf': WEB_CONF, 'conf.d/extra.conf': 'x\n' }, { files: [webFile] });
    const first = await m.serverCommand(USERS.admin, ['publish', src, '--composition', composition]);
    assert.is(first.code, 0, first.stderr);
    const lines = first.stdout.trim().split('\n');
    assert.is(lines.length, 2, first.stdout);
    assert.match(lines[0]!, /^put archive web-1\.tar\.gz in mesh-catalog_archives: \d+ bytes, sha256:[0-9a-f]{64}$/);
    assert.match(lines[1]!, /^put composition web build 1 in mesh-catalog_modules \(revision \d+\)$/);
    const one = (await stored(m, 'web'))!;
    assert.equal([one.build, one.published, one.archive.ref], ['1', true, `obj://${DEFAULT_ARCHIVES}/web-1.tar.gz`]);
    const bytes = (await archiveBytes(m, 'web-1.tar.gz'))!;
    assert.is(one.archive.digest, sha256(bytes));
    // What a node's client unpacks: the templates, nothing else.
    const unpacked = await unpackArchive(bytes, DEFAULT_ARCHIVE_LIMITS);
    assert.ok(unpacked.ok);
    assert.equal([...unpacked.value.keys()].sort(), ['conf.d/extra.conf', 'web.conf']);

    await m.kv.config.put('n1.web.level', 'debug');
    await m.assign('n1', 'web');
    const node = m.node('n1');
    await node.startEngine();
    await node.startClient();
    await m.waitReport('n1', 'web', (r) => r.state === 'applied');
    assert.is(node.moduleFile('web'), 'listen 8080\nlevel debug\n');

    // The same DIR, its times changed, under --build 2: the same bytes, the same digest.
    utimesSync(join(src, 'web.conf'), new Date(2001, 1, 1), new Date(2001, 1, 1));
    const second = await m.serverCommand(USERS.admin, ['publish', src, '--composition', composition, '--build', '2']);
    assert.is(second.code, 0, second.stderr);
    assert.match(second.stdout, /put archive web-2\.tar\.gz/);
    const two = (await stored(m, 'web'))!;
    assert.equal([two.build, two.archive.ref, two.archive.digest], ['2', `obj://${DEFAULT_ARCHIVES}/web-2.tar.gz`, one.archive.digest]);
    await m.waitReport('n1', 'web', (r) => r.state === 'applied' && r.build === '2');

    // An ARCHIVE: a tar.gz stored byte for byte; a plain tar gzipped.
    const tgz = gzipSync(await packTemplates({ 'web.conf': WEB_CONF }));
    writeFileSync(join(dir, 'web.tar.gz'), tgz);
    const given = await m.serverCommand(USERS.admin, ['publish', join(dir, 'web.tar.gz'), '--composition', composition, '--build', '3']);
    assert.is(given.code, 0, given.stderr);
    assert.is((await stored(m, 'web'))!.archive.digest, sha256(tgz));
    assert.ok(Buffer.from((await archiveBytes(m, 'web-3.tar.gz'))!).equals(tgz), 'the tar.gz stored byte for byte');
    const tar = await packTemplates({ 'web.conf': WEB_CONF });
    writeFileSync(join(dir, 'web.tar'), tar);
    const plain = await m.serverCommand(USERS.admin, ['publish', join(dir, 'web.tar'), '--composition', composition, '--build', '4']);
    assert.is(plain.code, 0, plain.stderr);
    assert.ok(gunzipSync((await archiveBytes(m, 'web-4.tar.gz'))!).equals(tar), 'the tar gzipped');
    await m.waitReport('n1', 'web', (r) => r.state === 'applied' && r.build === '4');
    assert.is(node.moduleFile('web'), 'listen 8080\nlevel debug\n');
  });
});

test('publish --dry-run says the archive and the composition and writes nothing; every refusal exits 1, each problem a line, nothing written', async () => {
  await withIsolatedMesh({ nodes: ['n1'] }, async (m) => {
    const dry = moduleFiles('dry', { 'web.conf': WEB_CONF }, { files: [webFile] });
    const said = await m.serverCommand(USERS.admin, ['publish', dry.src, '--composition', dry.composition, '--dry-run']);
    assert.is(said.code, 0, said.stderr);
    const [archiveLine, compositionLine] = said.stdout.trim().split('\n');
    assert.match(archiveLine!, /^would put archive dry-1\.tar\.gz in mesh-catalog_archives: \d+ bytes, sha256:[0-9a-f]{64}$/);
    assert.match(
      compositionLine!,
      /^would put composition dry in mesh-catalog_modules: \{"module":"dry","build":"1","published":true,"archive":\{"ref":"obj:\/\/mesh-catalog_archives\/dry-1\.tar\.gz"/,
    );
    assert.is(await stored(m, 'dry'), undefined);
    assert.is(await m.kv.archives.info('dry-1.tar.gz'), null);

    const refusals: [string, ReturnType<typeof moduleFiles>, RegExp][] = [
      [
        'mdoe',
        moduleFiles('r1', { 'web.conf': WEB_CONF }, { files: [{ path: '/etc/web.conf', template: 'web.conf', mdoe: 'seed' }] }),
        /composition\.json: field "provisioning\.files\.0\.mdoe" is an unknown field; did you mean "mode"\?/,
      ],
      [
        'secrest',
        moduleFiles('r2', { 'web.conf': 'k=${secret:api-key}\n' }, { files: [webFile], secrest: [{ name: 'api-key' }] }),
        /composition\.json: field "provisioning\.secrest" is an unknown field; did you mean "secrets"\?/,
      ],
      [
        'confg',
        moduleFiles('r3', { 'web.conf': 'port=${confg:port}\n' }, { files: [webFile] }),
        /web\.conf:1: \$\{confg:port\}: unknown kind "confg": did you mean "config"\?/,
      ],
      [
        'secret not named',
        moduleFiles('r4', { 'web.conf': 'k=${secret:x}\n' }, { files: [webFile] }),
        /web\.conf:1: \$\{secret:x\}: secret "x" is not named by the plan/,
      ],
      [
        'missing template',
        moduleFiles('r5', { 'web.conf': WEB_CONF }, { files: [webFile, { path: '/etc/other.conf', template: 'other.conf' }] }),
        /other\.conf: template other\.conf \(for \/etc\/other\.conf\) is not in the archive/,
      ],
      [
        'rollout',
        moduleFiles('r6', { 'web.conf': WEB_CONF }, { files: [webFile] }, { rollout: { waves: [0.5, 0.25], halt: 0, wait: -1 } }),
        /composition\.json: field "rollout/,
      ],
      [
        'collection not named',
        moduleFiles('r9', { 'web.conf': 'x=${collected:zsh}\n' }, { files: [webFile] }),
        /web\.conf:1: \$\{collected:zsh\}: collection "zsh" is not in the plan's collections/,
      ],
      ['unclosed', moduleFiles('r7', { 'web.conf': 'a=${config:name\n' }, { files: [webFile] }), /web\.conf:1: \$\{config:name is not closed/],
      [
        'a path climbing out of its dir',
        moduleFiles('r10', { 'web.conf': WEB_CONF }, { files: [{ ...webFile, path: '${dir:config}/../../etc/passwd' }] }),
        /^mesh-provisioner: file web\.conf: path "\$\{dir:config\}\/\.\.\/\.\.\/etc\/passwd" holds a "\.\." segment whatever the placement: the seat refuses every path it resolves to/m,
      ],
      [
        'a secret path with a . segment',
        moduleFiles('r11', { 'web.conf': WEB_CONF }, { files: [webFile], secrets: [{ name: 'key', path: '/srv/./${dir:config}' }] }),
        /^mesh-provisioner: secret key: path "\/srv\/\.\/\$\{dir:config\}" holds a "\." segment whatever the placement/m,
      ],
    ];
    for (const [why, files, expected] of refusals) {
      const run = await m.serverCommand(USERS.admin, ['publish', files.src, '--composition', files.composition]);
      assert.is(run.code, 1, `${why}: ${run.stdout}${run.stderr}`);
      assert.is(run.stdout, '', why);
      assert.match(run.stderr, expected, why);
      assert.match(run.stderr, /publish refused: \d+ problem\(s\); nothing written/, why);
      const module = (JSON.parse(readFileSync(files.composition, 'utf8')) as { module: string }).module;
      assert.is(await stored(m, module), undefined, why);
      assert.is(await m.kv.archives.info(`${module}-1.tar.gz`), null, why);
    }
    // A build past a name's 255 bytes (DESIGN §3), from the file or --build: refused at once, naming the limit.
    const long = 'b'.repeat(10_000);
    const longFile = moduleFiles('r12', { 'web.conf': WEB_CONF }, { files: [webFile] }, { build: long });
    for (const [args, code, line] of [
      [[], 1, /composition\.json: field "build" is 10000 bytes, past the limit of 255 bytes of a name \(the archive is <module>-<build>\.tar\.gz\)/],
      [['--build', long], 2, /^mesh-provisioner: --build is 10000 bytes, past the limit of 255 bytes of a name/],
    ] as const) {
      const started = Date.now();
      const run = await m.serverCommand(USERS.admin, ['publish', longFile.src, '--composition', longFile.composition, ...args]);
      assert.is(run.code, code, `${args.length > 0 ? '--build' : 'file'}: ${run.stdout}${run.stderr}`);
      assert.ok(Date.now() - started < 3000, `refused at once, not after ${Date.now() - started} ms`);
      assert.match(run.stderr, line);
    }
    assert.is(await stored(m, 'r12'), undefined);
    const names: string[] = [];
    for (const info of await m.kv.archives.list()) names.push(info.name);
    assert.ok(!names.some((n) => n.startsWith('r1')), `no archive of a refused module: ${names.join(', ')}`);
    // Only the admin login writes the catalogue: the seat's is refused, and nothing is written.
    const asSeat = await m.serverCommand(USERS.seat, ['publish', dry.src, '--composition', dry.composition]);
    assert.is(asSeat.code, 1, asSeat.stdout);
    assert.match(asSeat.stderr, /publish needs the admin login \(its seed, admin\.nk, as --nkey\)/);
    assert.is(await stored(m, 'dry'), undefined);
    // Every problem of one composition at once, each a line of its own.
    const many = moduleFiles('r8', { 'web.conf': 'k=${secret:x}\n' }, { files: [{ ...webFile, mdoe: 'seed' }], secrest: [] });
    const all = await m.serverCommand(USERS.admin, ['publish', many.src, '--composition', many.composition]);
    assert.is(all.code, 1);
    assert.match(all.stderr, /"mode"\?\n/);
    assert.match(all.stderr, /"secrets"\?\n/);
  });
});

test('on a bus without isolation publish creates the buckets as init would; a bucket holding more than its subject is refused, nothing written', async () => {
  const nats = await startNats();
  const nc = await connectBus({ servers: [nats.url], name: 'test' });
  try {
    const { src, composition } = moduleFiles('web', { 'web.conf': WEB_CONF }, { files: [webFile] });
    const publish = (build: string) =>
      runBundle('node', ROOT, 'dist/server', ['publish', src, '--composition', composition, '--build', build, '--nats', nats.url], {}, 20_000);
    ensureBuilt('server');
    const made = await publish('1');
    assert.is(made.code, 0, made.stderr);
    const jsm = await jetstreamManager(nc);
    for (const spec of [kvBucket(MODULES), objBucket(DEFAULT_ARCHIVES)])
      assert.equal(bucketProblems(spec, (await jsm.streams.info(streamOf(spec))).config), [], spec.name);
    const modules = await openKv(nc, MODULES);
    assert.is((await modules.get('web'))!.json<Stored>().build, '1');
    // The catalogue's stream widened to a second subject: no program binds it, publish included.
    const info = await jsm.streams.info(streamOf(kvBucket(MODULES)));
    await jsm.streams.update(info.config.name, { ...info.config, subjects: [...info.config.subjects, 'extra.>'] });
    const refused = await publish('2');
    assert.is(refused.code, 1, refused.stdout);
    assert.match(refused.stderr, /publish refused: .*mesh-catalog_modules.*holds "extra\.>"/);
    assert.is((await modules.get('web'))!.json<Stored>().build, '1');
    assert.is(await (await new Objm(nc).open(DEFAULT_ARCHIVES)).info('web-2.tar.gz'), null);
  } finally {
    await nc.close();
    await nats.cleanup();
  }
});

test('usage: no DIR, no --composition, a second argument, a file that cannot be read each exit 2 with one line; --help names publish and its flags', async () => {
  ensureBuilt('server');
  const run = (args: string[]) => runBundle('node', ROOT, 'dist/server', args, {}, 20_000);
  const { src, composition } = moduleFiles('web', { 'web.conf': WEB_CONF }, { files: [webFile] });
  const cases: [string[], RegExp][] = [
    [['publish', '--composition', composition], /publish needs a DIR or an ARCHIVE/],
    [['publish', src], /publish needs --composition FILE/],
    [['publish', src, 'more', '--composition', composition], /more/],
    [['publish', src, '--composition', join(src, 'none.json'), '--dry-run'], /cannot read .*none\.json/],
    [['publish', join(src, 'none'), '--composition', composition, '--dry-run'], /cannot read .*none/],
  ];
  for (const [args, expected] of cases) {
    const r = await run(args);
    assert.is(r.code, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.is(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.match(r.stderr, expected);
    assert.is(r.stdout, '');
  }
  const help = await run(['--help']);
  assert.is(help.code, 0);
  for (const word of ['publish DIR|ARCHIVE', '--composition', '--build', '--dry-run']) assert.ok(help.stdout.includes(word), word);
});

test.run();
