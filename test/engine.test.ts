// The fill socket (DESIGN §9): the reference engine driven through the client, over a real unix socket.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EngineUnavailable } from '../src/client/handoff/engine-errors.ts';
import { createEngineClient, type EngineClient } from '../src/client/handoff/fill-socket.ts';
import { startEngine, type RunningEngine } from '../src/engine/start.ts';
import { spliceBlock } from '../src/engine/managed.ts';
import { fillSecrets } from '../src/engine/secrets.ts';
import { contentDigest, type FillContent, type FillFile, type FillReply } from '../src/shared/contract/fill-protocol.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { tempDir } from './helpers/temp.ts';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..');

type Rig = {
  dir: string;
  root: string;
  secrets: string;
  journal: string;
  declare: string;
  socketPath: string;
  engine?: RunningEngine;
  client: EngineClient;
  start(opts?: { declare?: boolean }): Promise<void>;
  cleanup(): Promise<void>;
};

/** A temp dir with root, secrets and journal, a client on its socket, and the engine started on demand. */
function rig(): Rig {
  const dir = tempDir('engine-test-');
  const r: Rig = {
    dir,
    root: join(dir, 'root'),
    secrets: join(dir, 'secrets'),
    journal: join(dir, 'journal.log'),
    declare: join(dir, 'declare.json'),
    socketPath: join(dir, 'run', 'fill.sock'),
    client: undefined as unknown as EngineClient,
    async start(opts = {}) {
      r.engine = await startEngine({
        socketPath: r.socketPath,
        root: r.root,
        secretsDir: r.secrets,
        journalFile: r.journal,
        declareFile: opts.declare ? r.declare : undefined,
        log: memoryLogger(),
        declarePollMs: 30,
      });
    },
    async cleanup() {
      r.client.close();
      await r.engine?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  mkdirSync(r.root, { recursive: true });
  mkdirSync(r.secrets, { recursive: true });
  r.client = createEngineClient({ socketPath: r.socketPath, log: memoryLogger(), pollMs: 30 });
  return r;
}

async function started(opts?: { declare?: boolean }): Promise<Rig> {
  const r = rig();
  await r.start(opts);
  return r;
}

function file(path: string, content: FillContent, more: Partial<FillFile> = {}): FillFile {
  return { path, content, digest: contentDigest(content), mode: 'owned', change: 'none', ...more };
}

function actions(reply: FillReply): string[] {
  assert.ok(reply.ok, `reply not ok: ${JSON.stringify(reply)}`);
  return reply.ok ? reply.files.map((f) => f.action) : [];
}

function journalLines(r: Rig): string[] {
  return existsSync(r.journal) ? readFileSync(r.journal, 'utf8').split('\n').filter(Boolean) : [];
}

function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

test('three written files restart the program once, restart winning over a later reload, and the same bytes again restart nothing', async () => {
  const r = await started();
  try {
    const files = [
      file(join(r.root, 'etc/web/a.conf'), 'a=1\n', { change: 'restart' }),
      file(join(r.root, 'etc/web/b.conf'), 'b=1\n', { change: 'restart' }),
      file(join(r.root, 'etc/web/c.conf'), 'c=1\n', { change: 'reload' }),
    ];
    assert.equal(actions(await r.client.fill({ module: 'web', build: 'b1', files })), ['written', 'written', 'written']);
    assert.is(readFileSync(join(r.root, 'etc/web/a.conf'), 'utf8'), 'a=1\n');
    const lines = journalLines(r);
    assert.is(lines.length, 1);
    assert.match(lines[0]!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z restart web$/);
    assert.equal(actions(await r.client.fill({ module: 'web', build: 'b1', files })), ['unchanged', 'unchanged', 'unchanged']);
    assert.is(journalLines(r).length, 1);
  } finally {
    await r.cleanup();
  }
});

test('files that only reload give one reload line, and a change=none file gives none', async () => {
  const r = await started();
  try {
    const files = [
      file(join(r.root, 'x.conf'), 'x\n', { change: 'reload' }),
      file(join(r.root, 'y.conf'), 'y\n', { change: 'none' }),
      file(join(r.root, 'z.conf'), 'z\n', { change: 'reload' }),
    ];
    await r.client.fill({ module: 'proxy', build: 'b1', files });
    assert.equal(
      journalLines(r).map((l) => l.split(' ').slice(1).join(' ')),
      ['reload proxy'],
    );
    await r.client.fill({ module: 'proxy', build: 'b1', files: [file(join(r.root, 'y.conf'), 'y2\n')] });
    assert.is(journalLines(r).length, 1);
  } finally {
    await r.cleanup();
  }
});

test('an owned file changed on disk is put back, answered restored, with the fileMode the request names', async () => {
  const r = await started();
  try {
    const path = join(r.root, 'owned.conf');
    const req = { module: 'web', build: 'b1', files: [file(path, 'mine\n', { fileMode: '0640' })] };
    await r.client.fill(req);
    assert.is(statSync(path).mode & 0o777, 0o640);
    writeFileSync(path, 'edited by hand\n');
    assert.equal(actions(await r.client.fill(req)), ['restored']);
    assert.is(readFileSync(path, 'utf8'), 'mine\n');
    chmodSync(path, 0o666);
    assert.equal(actions(await r.client.fill(req)), ['restored']);
    assert.is(statSync(path).mode & 0o777, 0o640);
  } finally {
    await r.cleanup();
  }
});

test('a seed file is written when absent and kept, untouched, once it exists', async () => {
  const r = await started();
  try {
    const path = join(r.root, 'var/seed.db');
    const req = { module: 'db', build: 'b1', files: [file(path, 'initial\n', { mode: 'seed', change: 'restart' })] };
    assert.equal(actions(await r.client.fill(req)), ['written']);
    writeFileSync(path, 'grown by the program\n');
    assert.equal(actions(await r.client.fill(req)), ['kept']);
    assert.is(readFileSync(path, 'utf8'), 'grown by the program\n');
    assert.is(journalLines(r).length, 1);
  } finally {
    await r.cleanup();
  }
});

test('a managed block is appended after foreign lines, then replaced in place keeping every foreign byte', async () => {
  const r = await started();
  try {
    const path = join(r.root, 'etc/hosts');
    mkdirSync(dirname(path));
    writeFileSync(path, 'foreign 1\n; other BEGIN web\n');
    const put = (content: string) =>
      r.client.fill({
        module: 'web',
        build: 'b1',
        files: [file(path, content, { mode: 'managed', comment: ';' })],
      });
    assert.equal(actions(await put('10.0.0.1 web')), ['written']);
    assert.is(readFileSync(path, 'utf8'), 'foreign 1\n; other BEGIN web\n; BEGIN web\n10.0.0.1 web\n; END web\n');
    const notUtf8 = Buffer.from([0x66, 0xff, 0xfe, 0x0a]);
    writeFileSync(path, Buffer.concat([readFileSync(path), notUtf8]));
    assert.equal(actions(await put('10.0.0.2 wéb\n')), ['written']);
    const expected = Buffer.concat([Buffer.from('foreign 1\n; other BEGIN web\n; BEGIN web\n10.0.0.2 wéb\n; END web\n'), notUtf8]);
    assert.ok(readFileSync(path).equals(expected), readFileSync(path).toString('latin1'));
    assert.equal(actions(await put('10.0.0.2 wéb\n')), ['unchanged']);
  } finally {
    await r.cleanup();
  }
});

test('a managed file that is absent is created holding only the block, with # as the default comment', async () => {
  const r = await started();
  try {
    const path = join(r.root, 'profile');
    await r.client.fill({ module: 'web', build: 'b1', files: [file(path, 'export A=1\n', { mode: 'managed' })] });
    assert.is(readFileSync(path, 'utf8'), '# BEGIN web\nexport A=1\n# END web\n');
  } finally {
    await r.cleanup();
  }
});

test('a BEGIN line without its END line is refused rather than guessed at', () => {
  const spliced = spliceBlock('a\n# BEGIN web\nb\n', 'web', '#', 'x\n');
  assert.is(spliced.ok, false);
  assert.equal(spliceBlock('a\n# BEGIN web\nold\n# END web\nz\n', 'web', '#', 'x'), { ok: true, value: 'a\n# BEGIN web\nx\n# END web\nz\n' });
});

test('a secret part is filled from the secrets directory by its vault name, its trailing newline trimmed, and the text around it comes out byte for byte', async () => {
  const r = await started();
  try {
    mkdirSync(join(r.secrets, 'module/web'), { recursive: true });
    writeFileSync(join(r.secrets, 'module/web/api-key'), 's3cr$&t\n');
    const path = join(r.root, 'web.env');
    const content = ['KEY=', { secret: 'api-key' }, '\nAGAIN=', { secret: 'api-key' }, '\nHOME=${HOME}\nLIT=${secret:api-key} $${secret:api-key}\n'];
    const reply = await r.client.fill({
      module: 'web',
      build: 'b1',
      files: [file(path, content)],
      secrets: { 'api-key': 'module/web/api-key' },
    });
    assert.equal(actions(reply), ['written']);
    assert.is(readFileSync(path, 'utf8'), 'KEY=s3cr$&t\nAGAIN=s3cr$&t\nHOME=${HOME}\nLIT=${secret:api-key} $${secret:api-key}\n');
  } finally {
    await r.cleanup();
  }
});

test('a string content holding ${secret:api-key} is written literally, and no secret is read', async () => {
  const r = await started();
  try {
    mkdirSync(join(r.secrets, 'module/web'), { recursive: true });
    writeFileSync(join(r.secrets, 'module/web/api-key'), 'the-real-key\n');
    // Were the secret read, making it unreadable would refuse the file: it must not matter.
    chmodSync(join(r.secrets, 'module/web/api-key'), 0o000);
    const path = join(r.root, 'web.env');
    const text = 'VALUE=${secret:api-key}\nSURROGATE=\uD800${secret:api-key}\uD800\n';
    const reply = await r.client.fill({
      module: 'web',
      build: 'b1',
      files: [file(path, text)],
      secrets: { 'api-key': 'module/web/api-key' },
    });
    assert.equal(actions(reply), ['written']);
    const written = readFileSync(path, 'utf8');
    assert.ok(written.startsWith('VALUE=${secret:api-key}\nSURROGATE='), written);
    assert.not.ok(written.includes('the-real-key'));
    assert.is(statSync(path).mode & 0o777, 0o644);
    const asked: string[] = [];
    const spy = async (vault: string) => (asked.push(vault), { ok: true as const, value: 'the-real-key' });
    assert.equal(await fillSecrets(text, { 'api-key': 'module/web/api-key' }, spy, 'web'), { ok: true, value: text });
    assert.equal(asked, []);
  } finally {
    await r.cleanup();
  }
});

test('a secret part the request does not name, or the directory does not hold, refuses only its file', async () => {
  const r = await started();
  try {
    const reply = await r.client.fill({
      module: 'web',
      build: 'b1',
      secrets: { gone: 'module/web/gone' },
      files: [
        file(join(r.root, 'a'), ['x=', { secret: 'unnamed' }]),
        file(join(r.root, 'b'), ['x=', { secret: 'gone' }]),
        file(join(r.root, 'c'), 'plain'),
        file(join(r.root, 'd'), 'x=${secret:unnamed}'),
      ],
    });
    assert.equal(actions(reply), ['refused', 'refused', 'written', 'written']);
    assert.ok(reply.ok);
    if (reply.ok) {
      assert.match(reply.files[0]!.reason!, /unnamed.*not named/);
      assert.match(reply.files[1]!.reason!, /module\/web\/gone.*missing/);
    }
    assert.not.ok(existsSync(join(r.root, 'a')));
    assert.is(readFileSync(join(r.root, 'd'), 'utf8'), 'x=${secret:unnamed}');
  } finally {
    await r.cleanup();
  }
});

test("a managed file whose content holds its own BEGIN or END line, or another block's, is refused with the reason and the file kept", async () => {
  const r = await started();
  try {
    const path = join(r.root, 'etc/hosts');
    mkdirSync(dirname(path));
    writeFileSync(path, 'foreign\n# BEGIN web\nold\n# END web\n');
    const put = (content: FillContent) =>
      r.client.fill({
        module: 'web',
        build: 'b1',
        files: [file(path, content, { mode: 'managed' })],
      });
    for (const value of ['a\n# END web\nb\n', '# BEGIN web\n', 'x\n# END web\r\n', 'x\n# BEGIN db\n']) {
      const reply = await put(`host\n${value}`);
      assert.equal(actions(reply), ['refused'], JSON.stringify(value));
      if (reply.ok) assert.match(reply.files[0]!.reason!, /holds the line "# (BEGIN|END) (web|db)".*(own block marker|another block)/);
    }
    assert.is(readFileSync(path, 'utf8'), 'foreign\n# BEGIN web\nold\n# END web\n');
    // A marker made from a secret's value is refused without the line, which would show the value.
    mkdirSync(join(r.secrets, 'module/web'), { recursive: true });
    writeFileSync(join(r.secrets, 'module/web/tail'), 'web\n');
    const secret = await r.client.fill({
      module: 'web',
      build: 'b1',
      secrets: { tail: 'module/web/tail' },
      files: [file(path, ['# END ', { secret: 'tail' }, '\n'], { mode: 'managed' })],
    });
    assert.equal(actions(secret), ['refused']);
    if (secret.ok) assert.match(secret.files[0]!.reason!, /secret part's value makes a BEGIN or END line/);
    // Text that only looks like a marker is kept: leading space, another comment, a name with a dot.
    assert.equal(actions(await put(' # END web\n; END web\n# END web.x\n')), ['written']);
    assert.is(readFileSync(path, 'utf8'), 'foreign\n# BEGIN web\n # END web\n; END web\n# END web.x\n# END web\n');
  } finally {
    await r.cleanup();
  }
});

test('a path outside the root is refused with the reason, whether plain, through .. or through a link', async () => {
  const r = await started();
  try {
    symlinkSync(r.dir, join(r.root, 'escape'));
    const reply = await r.client.fill({
      module: 'web',
      build: 'b1',
      files: [file(join(r.dir, 'outside.conf'), 'x'), file(join(r.root, '../dotdot.conf'), 'x'), file(join(r.root, 'escape/linked.conf'), 'x')],
    });
    assert.equal(actions(reply), ['refused', 'refused', 'refused']);
    if (reply.ok) for (const f of reply.files) assert.match(f.reason!, /outside the root/);
    assert.not.ok(existsSync(join(r.dir, 'outside.conf')));
    assert.not.ok(existsSync(join(r.dir, 'dotdot.conf')));
    assert.not.ok(existsSync(join(r.dir, 'linked.conf')));
  } finally {
    await r.cleanup();
  }
});

test('a file whose digest does not match its content is refused', async () => {
  const r = await started();
  try {
    const bad = { ...file(join(r.root, 'a'), 'new'), digest: contentDigest('old') };
    const reply = await r.client.fill({ module: 'web', build: 'b1', files: [bad] });
    assert.equal(actions(reply), ['refused']);
    assert.not.ok(existsSync(join(r.root, 'a')));
  } finally {
    await r.cleanup();
  }
});

test('an undeclared path is refused, then written once the declaration names it and the engine knocks', async () => {
  const r = rig();
  try {
    writeFileSync(r.declare, '[]');
    const created = new Promise<void>((resolve) => r.client.onKnock(resolve));
    await r.start({ declare: true });
    // The creation knock is awaited first, so the knock below can only come from the declaration.
    await within(3000, 'knock on engine start', created);
    const path = join(r.root, 'etc/late.conf');
    const req = { module: 'web', build: 'b1', files: [file(path, 'late\n')] };
    const first = await r.client.fill(req);
    assert.equal(first, { id: 1, ok: true, files: [{ path, action: 'refused', reason: 'not declared' }] });
    const knocked = new Promise<void>((resolve) => r.client.onKnock(resolve));
    writeFileSync(r.declare, JSON.stringify([path]));
    await within(3000, 'knock after the declaration changed', knocked);
    assert.equal(actions(await r.client.fill(req)), ['written']);
  } finally {
    await r.cleanup();
  }
});

test('a file refused for a missing secret is written after the secret arrives and the engine knocks', async () => {
  const r = rig();
  try {
    const created = new Promise<void>((resolve) => r.client.onKnock(resolve));
    await r.start();
    await within(3000, 'knock on engine start', created);
    const path = join(r.root, 'etc/app.env');
    const req = { module: 'app', build: 'b1', files: [file(path, ['KEY=', { secret: 'k' }, '\n'])], secrets: { k: 'module/app/k' } };
    assert.equal(actions(await r.client.fill(req)), ['refused']);
    const knocked = new Promise<void>((resolve) => r.client.onKnock(resolve));
    mkdirSync(join(r.secrets, 'module/app'), { recursive: true });
    writeFileSync(join(r.secrets, 'module/app/k'), 'late\n');
    await within(3000, 'knock after the secret arrived', knocked);
    assert.equal(actions(await r.client.fill(req)), ['written']);
    assert.is(readFileSync(path, 'utf8'), 'KEY=late\n');
  } finally {
    await r.cleanup();
  }
});

test('a malformed line is answered ok:false, naming the field, and the engine keeps serving', async () => {
  const r = await started();
  try {
    const replies: string[] = [];
    const raw = createConnection(r.socketPath);
    raw.setEncoding('utf8');
    let buffered = '';
    raw.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      replies.push(...lines);
    });
    raw.write('this is not json\n{"id":5,"op":"fill","module":"web","build":"b1","files":[{"path":"/x"}]}\n');
    await within(
      2000,
      'two replies',
      (async () => {
        while (replies.length < 2) await new Promise((s) => setTimeout(s, 10));
      })(),
    );
    raw.destroy();
    const [notJson, badShape] = replies.map((l) => JSON.parse(l));
    assert.equal({ id: notJson.id, ok: notJson.ok }, { id: null, ok: false });
    assert.match(notJson.error, /not JSON/);
    assert.equal({ id: badShape.id, ok: badShape.ok }, { id: 5, ok: false });
    assert.match(badShape.error, /files\.0\.content/);
    assert.equal(actions(await r.client.fill({ module: 'web', build: 'b1', files: [file(join(r.root, 'ok'), 'ok')] })), ['written']);
  } finally {
    await r.cleanup();
  }
});

test('forty requests pipelined on one connection are each answered, with their own files', async () => {
  const r = await started();
  try {
    const replies = await Promise.all(
      Array.from({ length: 40 }, (_, i) => r.client.fill({ module: `m${i}`, build: 'b1', files: [file(join(r.root, `m${i}.conf`), `n=${i}\n`)] })),
    );
    replies.forEach((reply, i) => {
      assert.ok(reply.ok);
      if (reply.ok) assert.equal(reply.files, [{ path: join(r.root, `m${i}.conf`), action: 'written' }]);
    });
    assert.is(readFileSync(join(r.root, 'm39.conf'), 'utf8'), 'n=39\n');
  } finally {
    await r.cleanup();
  }
});

test('the client rejects with EngineUnavailable while no engine listens, then fills after the engine starts and knocks', async () => {
  const r = rig();
  try {
    const req = { module: 'web', build: 'b1', files: [file(join(r.root, 'a'), 'a')] };
    const err = await r.client.fill(req).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.instance(err, EngineUnavailable);
    const knocked = new Promise<void>((resolve) => r.client.onKnock(resolve));
    await r.start();
    await within(3000, 'knock on engine start', knocked);
    assert.equal(actions(await r.client.fill(req)), ['written']);
  } finally {
    await r.cleanup();
  }
});

test('a request in flight when the engine drops the connection is rejected, and the next fill reconnects', async () => {
  const r = rig();
  mkdirSync(dirname(r.socketPath), { recursive: true });
  const mute = createServer((socket) => socket.once('data', () => socket.destroy()));
  await new Promise<void>((resolve) => mute.listen(r.socketPath, resolve));
  try {
    const req = { module: 'web', build: 'b1', files: [file(join(r.root, 'a'), 'a')] };
    const err = await r.client.fill(req).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.instance(err, EngineUnavailable);
    await new Promise<void>((resolve) => mute.close(() => resolve()));
    await r.start();
    assert.equal(actions(await r.client.fill(req)), ['written']);
  } finally {
    await r.cleanup();
  }
});

test('a stale socket left by a killed engine is replaced at start, and a live engine is not taken over', async () => {
  const r = rig();
  try {
    mkdirSync(dirname(r.socketPath), { recursive: true });
    const script = `require('net').createServer().listen(${JSON.stringify(r.socketPath)}, () => console.log('up'))`;
    const killed = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'ignore'] });
    await new Promise((resolve) => killed.stdout.once('data', resolve));
    killed.kill('SIGKILL');
    await new Promise((resolve) => killed.once('exit', resolve));
    assert.ok(existsSync(r.socketPath), 'the killed server left its socket behind');
    await r.start();
    assert.equal(actions(await r.client.fill({ module: 'web', build: 'b1', files: [file(join(r.root, 'a'), 'a')] })), ['written']);
    const second = await startEngine({ socketPath: r.socketPath, root: r.root, log: memoryLogger() }).then(
      async (engine) => {
        await engine.close();
        return undefined;
      },
      (err: Error) => err,
    );
    assert.match(String(second?.message), /in use/);
    assert.equal(actions(await r.client.fill({ module: 'web', build: 'b1', files: [file(join(r.root, 'b'), 'b')] })), ['written']);
  } finally {
    await r.cleanup();
  }
});

test('temp files a killed engine left are swept from a directory at the first fill there, and only those', async () => {
  const r = rig();
  try {
    const dir = join(r.root, 'etc/web');
    mkdirSync(dir, { recursive: true });
    // What a killed run leaves: a prefix of a.conf, and a whole secret of another file, never renamed.
    const left = ['.a.conf.mesh-0123456789ab.tmp', '.tls.key.mesh-ba9876543210.tmp'];
    for (const name of left) writeFileSync(join(dir, name), 'a=');
    // Not the engine's: other temp-looking names, and a directory named like a temp file.
    const others = ['.a.conf.0123456789ab.tmp', '.a.conf.mesh-xyz.tmp', 'notes.tmp'];
    for (const name of others) writeFileSync(join(dir, name), 'keep');
    mkdirSync(join(dir, '.b.conf.mesh-0123456789ab.tmp'));
    await r.start();
    assert.equal(actions(await r.client.fill({ module: 'web', build: 'b1', files: [file(join(dir, 'a.conf'), 'a=1\n')] })), ['written']);
    const now = readdirSync(dir).sort();
    assert.equal(now, ['.a.conf.0123456789ab.tmp', '.a.conf.mesh-xyz.tmp', '.b.conf.mesh-0123456789ab.tmp', 'a.conf', 'notes.tmp']);
    assert.is(readFileSync(join(dir, 'a.conf'), 'utf8'), 'a=1\n');
  } finally {
    await r.cleanup();
  }
});

test('the bundle answers --help with 0, a bad flag with 2 in one line, and SIGTERM removes its socket and exits 0', async () => {
  const build = await run(process.execPath, ['build.mjs']);
  assert.is(build.code, 0, build.stderr);
  const bundle = join(REPO, 'dist/engine.js');
  const help = await run(process.execPath, [bundle, '--help']);
  assert.is(help.code, 0);
  assert.match(help.stdout, /--root DIR/);
  const bad = await run(process.execPath, [bundle, '--bogus']);
  assert.is(bad.code, 2);
  assert.is(bad.stderr.trim().split('\n').length, 1);

  const r = rig();
  try {
    const child = spawn(process.execPath, [bundle, '--root', r.root, '--socket', r.socketPath], { stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await within(
      5000,
      'socket of the bundle',
      (async () => {
        while (!existsSync(r.socketPath)) await new Promise((s) => setTimeout(s, 20));
      })(),
    );
    assert.equal(actions(await r.client.fill({ module: 'web', build: 'b1', files: [file(join(r.root, 'a'), 'a')] })), ['written']);
    child.kill('SIGTERM');
    assert.is(await within(5000, 'exit on SIGTERM', exited), 0);
    assert.not.ok(existsSync(r.socketPath));
  } finally {
    await r.cleanup();
  }
});

test('a secrets directory not made yet (the engine up before the vault) is said once at notice, not as a warning', async () => {
  const r = rig();
  rmSync(r.secrets, { recursive: true });
  const log = memoryLogger();
  r.engine = await startEngine({ socketPath: r.socketPath, root: r.root, secretsDir: r.secrets, journalFile: r.journal, log });
  try {
    const said = log.lines.filter((l) => l.includes(r.secrets));
    assert.equal(said.length, 1, log.lines.join('\n'));
    assert.match(said[0]!, / notice .* is not there yet: a secret put there is read at the next fill that names it$/);
    assert.not.ok(
      log.lines.some((l) => / warning /.test(l)),
      log.lines.join('\n'),
    );
  } finally {
    await r.cleanup();
  }
});

function run(cmd: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: REPO });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

test.run();
