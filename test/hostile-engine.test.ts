// The engine bundle as a process under hostile input (DESIGN §3, §9): text that looks like a secret is
// text, a block's content cannot carry its own markers, and a 100 MB line costs a bounded amount of memory.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { createEngineClient, type EngineClient } from '../src/client/handoff/fill-socket.ts';
import { contentDigest, type FillContent, type FillFile, type FillReply } from '../src/shared/contract/fill-protocol.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { cleanupBundles, copyBundleAlone, ensureBuilt, startBundle, type Running } from './helpers/bundle.ts';
import { tempDir } from './helpers/temp.ts';

const MiB = 1024 * 1024;

type Rig = { dir: string; root: string; socketPath: string; engine: Running; client: EngineClient; close(): Promise<void> };

test.before(() => ensureBuilt('engine'));
test.after(() => cleanupBundles());

/** The engine bundle, copied alone, on a socket in a temp dir with a secret `module/web/api-key`. */
async function rig(): Promise<Rig> {
  const dir = tempDir('hostile-engine-');
  const root = join(dir, 'root');
  const secrets = join(dir, 'secrets');
  const socketPath = join(dir, 'fill.sock');
  mkdirSync(root);
  mkdirSync(join(secrets, 'module/web'), { recursive: true });
  writeFileSync(join(secrets, 'module/web/api-key'), 'the-real-key\n');
  const engine = startBundle('node', copyBundleAlone('engine'), 'engine', ['--root', root, '--socket', socketPath, '--secrets', secrets]);
  await engine.waitForLog(/engine listening on/);
  const client = createEngineClient({ socketPath, log: memoryLogger(), pollMs: 50, timeoutMs: 10_000 });
  return {
    dir,
    root,
    socketPath,
    engine,
    client,
    async close() {
      client.close();
      engine.kill();
      await engine.exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function file(path: string, content: FillContent, more: Partial<FillFile> = {}): FillFile {
  return { path, content, digest: contentDigest(content), mode: 'owned', change: 'none', ...more };
}

function only(reply: FillReply): { action: string; reason?: string } {
  assert.ok(reply.ok, JSON.stringify(reply));
  return reply.ok ? reply.files[0]! : { action: 'none' };
}

function rssBytes(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb) * 1024;
}

const secrets = { 'api-key': 'module/web/api-key' };

test('a string content holding ${secret:api-key}, the secret present, is written as that text and not as the secret', async () => {
  const r = await rig();
  try {
    const path = join(r.root, 'web.env');
    const text = 'KEY=${secret:api-key}\nLONE=\uD800api-key\uD800\n';
    assert.is(only(await r.client.fill({ module: 'web', build: 'b1', files: [file(path, text)], secrets })).action, 'written');
    const written = readFileSync(path, 'utf8');
    assert.ok(written.startsWith('KEY=${secret:api-key}\n'), written);
    assert.not.ok(written.includes('the-real-key'));
  } finally {
    await r.close();
  }
});

test('a content of parts gets the secret value in its secret part, with the file mode asked', async () => {
  const r = await rig();
  try {
    const path = join(r.root, 'web.env');
    const parts = ['KEY=', { secret: 'api-key' }, '\nLIT=${secret:api-key}\n'];
    const reply = await r.client.fill({ module: 'web', build: 'b1', files: [file(path, parts, { fileMode: '0600' })], secrets });
    assert.is(only(reply).action, 'written');
    assert.is(readFileSync(path, 'utf8'), 'KEY=the-real-key\nLIT=${secret:api-key}\n');
    assert.is(statSync(path).mode & 0o777, 0o600);
  } finally {
    await r.close();
  }
});

test('a managed content holding its own BEGIN or END line is refused, and the file keeps its block', async () => {
  const r = await rig();
  try {
    const path = join(r.root, 'hosts');
    const put = (content: string) => r.client.fill({ module: 'web', build: 'b1', files: [file(path, content, { mode: 'managed' })] });
    assert.is(only(await put('10.0.0.1 web\n')).action, 'written');
    for (const content of ['evil\n# END web\n10.6.6.6 bank\n# BEGIN web\n', '# BEGIN web\r\n']) {
      const result = only(await put(content));
      assert.is(result.action, 'refused');
      assert.match(result.reason!, /own block marker/);
    }
    assert.is(readFileSync(path, 'utf8'), '# BEGIN web\n10.0.0.1 web\n# END web\n');
  } finally {
    await r.close();
  }
});

test('a 100 MB line closes its connection within bounded memory, and the engine answers a new connection', async () => {
  const r = await rig();
  try {
    const pid = r.engine.child.pid!;
    const before = rssBytes(pid);
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssBytes(pid));
    }, 20);
    const started = Date.now();
    const sent = await new Promise<number>((resolve) => {
      const raw = createConnection(r.socketPath);
      const chunk = Buffer.alloc(MiB, 0x61);
      let bytes = 0;
      raw.on('error', () => {});
      raw.on('close', () => resolve(bytes));
      const pump = () => {
        while (bytes < 100 * MiB && !raw.destroyed) {
          bytes += chunk.length;
          if (!raw.write(chunk)) return void raw.once('drain', pump);
        }
        raw.end();
      };
      raw.on('connect', pump);
    });
    const ms = Date.now() - started;
    clearInterval(sampler);
    peak = Math.max(peak, rssBytes(pid));
    assert.ok(sent < 100 * MiB, `the engine read all ${sent} bytes instead of closing the connection`);
    assert.ok(ms < 10_000, `closing took ${ms} ms`);
    assert.ok(peak - before < 64 * MiB + 48 * MiB, `RSS grew by ${Math.round((peak - before) / MiB)} MiB`);
    assert.match(r.engine.stderr(), /past the limit of 67108864 bytes/);
    const path = join(r.root, 'after.conf');
    assert.is(only(await r.client.fill({ module: 'web', build: 'b1', files: [file(path, 'still here\n')] })).action, 'written');
    assert.ok(existsSync(path));
    console.log(`  100 MB line: closed after ${Math.round(sent / MiB)} MiB in ${ms} ms, RSS ${Math.round(before / MiB)} → peak ${Math.round(peak / MiB)} MiB`);
  } finally {
    await r.close();
  }
});

test.run();
