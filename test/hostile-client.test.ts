// Hostile input against the bundles (issue "Hostile input"): the seat, the reference engine and
// the client each run as their own process on a real nats-server; each test is one attack.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Report } from '../src/shared/contract/report.ts';
import { writeComposition } from './helpers/archive.ts';
import { cleanupBundles, ensureBuilt, type Running } from './helpers/bundle.ts';
import { startMesh, type Mesh } from './helpers/mesh.ts';
import { plantPlan } from './helpers/planted.ts';
import { waitFor } from './helpers/wait.ts';

type Hostile = { m: Mesh; client: Running };

test.before(() => {
  ensureBuilt('server');
  ensureBuilt('client');
  ensureBuilt('engine');
});
test.after(() => cleanupBundles());

/** A request line as the fake engine reads it. */
type FakeRequest = { id: number; module: string; files: { path: string }[] };
/** Answers each request line of a fake engine: a reply line, or nothing; `write` sends a line on the same connection later. */
type FakeAnswer = (request: FakeRequest, write: (line: string) => void) => string | undefined;

/**
 * A fake engine on the mesh's socket: it keeps every connection and answers each fill as told;
 * `connections` counts those made, `requests` the fills. A ping (DESIGN §14, the client's alive tick)
 * is answered as the reference engine answers it, or left unanswered by a silent engine (`pings: 'ignore'`);
 * it is never handed to `answer`, which is written for fills.
 */
async function fakeEngine(
  socketPath: string,
  answer: FakeAnswer,
  opts: { pings?: 'answer' | 'ignore' } = {},
): Promise<{ requests: number; connections: number; close(): void }> {
  const sockets: Socket[] = [];
  const fake = {
    requests: 0,
    connections: 0,
    close: () => {
      server.close();
      for (const s of sockets) s.destroy();
    },
  };
  const server = createServer((socket) => {
    sockets.push(socket);
    fake.connections++;
    let buffered = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        const request = JSON.parse(line) as FakeRequest & { op?: string };
        if (request.op === 'ping') {
          if (opts.pings !== 'ignore') socket.write(JSON.stringify({ id: request.id, ok: true }) + '\n');
          continue;
        }
        fake.requests++;
        const reply = answer(request, (l) => void socket.write(l));
        if (reply !== undefined) socket.write(reply);
      }
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return fake;
}

/** A mesh whose engine and client are the bundles, the client given the mesh's --archive-dir. */
async function withBundles(fn: (h: Hostile) => Promise<void>, opts: { engine?: boolean; clientArgs?: string[] } = {}): Promise<void> {
  const m = await startMesh({ engine: false });
  let engine: Running | undefined;
  let client: Running | undefined;
  try {
    if (opts.engine !== false) {
      engine = m.startEngineProcess();
      await engine.waitForLog(/listening/);
    }
    client = m.startClientProcess({ args: opts.clientArgs ?? [] });
    await client.waitForLog(/start: filling/);
    await fn({ m, client });
  } catch (err) {
    throw new Error(
      `${(err as Error).message}\nclient said:\n${client?.stderr().slice(-3000)}\nengine said:\n${engine?.stderr().slice(-1500) ?? '(no engine bundle)'}`,
    );
  } finally {
    await m.close();
  }
}

/** The peak resident memory of a process, in MiB. */
function peakMiB(pid: number | undefined): number {
  return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

/** A module of one file `<module>.conf` from `template`, assigned to n1. */
async function oneFile(
  m: Mesh,
  module: string,
  template: string | Uint8Array,
  extra: Record<string, unknown> = {},
  placement?: Record<string, Record<string, string | number>>,
) {
  await m.publish(module, {
    templates: { [`${module}.conf`]: template as string },
    provisioning: { files: [{ path: '${dir:config}/' + module + '.conf', template: `${module}.conf`, change: 'restart' }], ...extra },
  });
  await m.assign('n1', module, placement);
}

const failed = (r: Report) => r.state === 'failed';

test('#2 a placement value shaped like a secret stays text; a lone surrogate or a trailing $ before a real secret leaves it whole', () =>
  withBundles(async ({ m }) => {
    m.secret('module/w2/api-key', 'TOPSECRET');
    await m.setConfig('n1', 'w2', 'v', 'abc$');
    const placement = { dir: { config: join(m.root, 'etc', 'w2'), x: '\uD800api-key\uD800', lone: '\uD800' } };
    await oneFile(m, 'w2', 'V=${dir:x}|\nL=${dir:lone}${secret:api-key}\nD=${config:v}${secret:api-key}\n', { secrets: [{ name: 'api-key' }] }, placement);
    await m.waitReport('n1', 'w2', (r) => r.state === 'applied');
    const file = readFileSync(join(m.root, 'etc/w2/w2.conf'), 'utf8');
    assert.is(file, 'V=\uFFFDapi-key\uFFFD|\nL=\uFFFDTOPSECRET\nD=abc$TOPSECRET\n');
    assert.is(file.split('TOPSECRET').length - 1, 2, 'the secret is written exactly where the template names it');
  }));

test('#3 file:// refs: outside --archive-dir refused without a digest of the file; FIFOs refused at once; other modules go on', () =>
  withBundles(async ({ m }) => {
    const digest = 'sha256:' + 'b'.repeat(64);
    const fileRef = (module: string, ref: string) =>
      writeComposition(m.kv.modules, {
        module,
        build: '1',
        published: true,
        archive: { ref, digest },
        provisioning: { files: [{ path: '${dir:config}/x.conf', template: 'x.conf' }] },
      });
    await fileRef('pw', 'file:///etc/passwd');
    await m.assign('n1', 'pw');
    const pw = await m.waitReport('n1', 'pw', failed);
    assert.match(pw.reason!, /\/etc\/passwd is not under the archive directory/);
    const passwdDigest = createHash('sha256').update(readFileSync('/etc/passwd')).digest('hex');
    assert.not.ok(JSON.stringify(pw).includes(passwdDigest), 'the report names no digest of the file');
    for (let i = 0; i < 5; i++) {
      const fifo = join(m.archiveDir, `pipe${i}.tar`);
      execFileSync('mkfifo', [fifo]);
      await fileRef(`fifo${i}`, `file://${fifo}`);
      await m.assign('n1', `fifo${i}`);
    }
    for (let i = 0; i < 5; i++) assert.match((await m.waitReport('n1', `fifo${i}`, failed, 5000)).reason!, /is a FIFO, not a regular file/);
    await oneFile(m, 'after', 'ok\n');
    await m.waitReport('n1', 'after', (r) => r.state === 'applied', 5000);
  }));

test('#7 a placeholder name of 5,000 characters fails its module with the limit; the client stays connected', () =>
  withBundles(async ({ m, client }) => {
    await oneFile(m, 'long', 'x ${config:' + 'n'.repeat(5000) + '}\n');
    const r = await m.waitReport('n1', 'long', failed);
    assert.match(r.reason!, /its name is 5000 bytes, past the limit of 255/);
    await oneFile(m, 'after', 'ok\n');
    await m.waitReport('n1', 'after', (x) => x.state === 'applied');
    assert.not.match(client.stderr(), /disconnected|reconnected/);
  }));

test('#9 a 15 MB template of unclosed `${` is handed as text in bounded memory', () =>
  withBundles(async ({ m, client }) => {
    const template = '${'.repeat(7_500_000);
    await oneFile(m, 'big', template);
    await m.waitReport('n1', 'big', (r) => r.state === 'applied', 30_000);
    const path = join(m.root, 'etc/big/big.conf');
    assert.is(statSync(path).size, template.length);
    assert.is(createHash('sha256').update(readFileSync(path)).digest('hex'), createHash('sha256').update(template).digest('hex'));
    const peak = peakMiB(client.child.pid);
    assert.ok(peak < 600, `client peak RSS ${peak.toFixed(0)} MiB`);
    console.log(`hostile: 15 MB template of \${ → client peak RSS ${peak.toFixed(0)} MiB`);
  }));

test('#12 #15 a planted plan with a secret the engine cannot name or a path that is not absolute and normal fails its module', () =>
  withBundles(async ({ m }) => {
    await plantPlan(m.kv, 'n1', 'brace', { secrets: [{ name: 'a}b', vault: 'module/brace/a}b' }] });
    await plantPlan(m.kv, 'n1', 'dots', { files: [{ path: '/etc/../etc/x.conf', template: 'x', mode: 'owned', change: 'none' }] });
    await plantPlan(m.kv, 'n1', 'rel', { files: [{ path: 'etc/x.conf', template: 'x', mode: 'owned', change: 'none' }] });
    assert.match((await m.waitReport('n1', 'brace', failed)).reason!, /secrets\.0\.name/);
    assert.match((await m.waitReport('n1', 'dots', failed)).reason!, /files\.0\.path/);
    assert.match((await m.waitReport('n1', 'rel', failed)).reason!, /files\.0\.path/);
    assert.equal(m.journal(), [], 'the engine was never asked');
  }));

test('#13 a report too large for the bus is published cut to fit, saying what was cut', () =>
  withBundles(async ({ m, client }) => {
    const deep = (i: number) => `/srv/${i}/` + 'segment/'.repeat(480) + 'x.conf';
    const files = Array.from({ length: 230 }, (_, i) => ({ path: deep(i), template: 't', mode: 'owned', change: 'none' }));
    await m.publish('wide', { templates: { t: '${config:missing}${config:absent}\n' }, provisioning: {} });
    const composition = JSON.parse(new TextDecoder().decode((await m.kv.modules.get('wide'))!.value));
    await m.kv.modules.delete('wide');
    await plantPlan(m.kv, 'n1', 'wide', { archive: composition.archive, files });
    const r = await m.waitReport('n1', 'wide', (x) => x.state === 'waiting');
    assert.match(r.reason!, /report cut to fit \d+ bytes/);
    assert.ok(JSON.stringify(r).length < 1024 * 1024);
    assert.not.match(client.stderr(), /\n\s+at /, 'no stack trace in the log');
  }));

test('#16 a leading byte-order mark of a template and of a config value is kept, every byte', () =>
  withBundles(async ({ m }) => {
    await m.setConfig('n1', 'bom', 'v', new Uint8Array([0xef, 0xbb, 0xbf, 0x76]));
    const template = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('a=${config:v}\n')]);
    await m.publish('bom', {
      templates: { 'bom.conf': new TextDecoder('utf-8', { ignoreBOM: true }).decode(template) },
      provisioning: { files: [{ path: '${dir:config}/bom.conf', template: 'bom.conf' }] },
    });
    await m.assign('n1', 'bom');
    await m.waitReport('n1', 'bom', (r) => r.state === 'applied');
    assert.equal([...readFileSync(join(m.root, 'etc/bom/bom.conf'))], [0xef, 0xbb, 0xbf, 0x61, 0x3d, 0xef, 0xbb, 0xbf, 0x76, 0x0a]);
  }));

test('#17 real files’ own ${word:…} syntax fails the module listing every one with the escape that keeps it', () =>
  withBundles(async ({ m }) => {
    await oneFile(m, 'real', 'c=${line:0:1}\nlog=${sys:os.name}\nz=${ref:t}\naws=${aws:username}\n');
    const r = await m.waitReport('n1', 'real', failed);
    for (const p of ['line:0:1', 'sys:os.name', 'ref:t', 'aws:username']) assert.ok(r.reason!.includes(`(write $\${${p}} to keep it as text)`), r.reason);
  }));

test('#5 forty modules stuck on an engine that keeps the connection silent: a knock of the recovered engine sends them all, and a new module too', () =>
  withBundles(
    async ({ m }) => {
      const silent = await fakeEngine(m.socketPath, () => undefined, { pings: 'ignore' });
      for (let i = 0; i < 40; i++) await oneFile(m, `s${i}`, `n ${i}\n`);
      await waitFor('40 requests held by the silent engine', () => silent.requests >= 32);
      // The engine comes back on a new socket at the same path (a knock); the old connections stay open and silent.
      rmSync(m.socketPath);
      const engine = m.startEngineProcess();
      try {
        await engine.waitForLog(/listening/);
        await oneFile(m, 'fresh', 'new\n');
        await m.waitReport('n1', 'fresh', (r) => r.state === 'applied', 10_000);
        for (let i = 0; i < 40; i++) await m.waitReport('n1', `s${i}`, (r) => r.state === 'applied', 10_000);
      } finally {
        engine.kill();
        silent.close();
      }
    },
    { engine: false },
  ));

test('#5 a silent engine is given up after --engine-timeout: the module waits with the reason', () =>
  withBundles(
    async ({ m }) => {
      const silent = await fakeEngine(m.socketPath, () => undefined, { pings: 'ignore' });
      try {
        await oneFile(m, 'mute', 'x\n');
        const r = await m.waitReport('n1', 'mute', (x) => x.state === 'waiting');
        assert.match(r.reason!, /did not answer the fill of mute within 1000 ms; waiting for a knock/);
        assert.equal(
          r.files.map((f) => f.action),
          ['pending'],
        );
      } finally {
        silent.close();
      }
    },
    { engine: false, clientArgs: ['--engine-timeout', '1'] },
  ));

test('#11 an engine reply that confirms no file of one module: that module waits naming its file, the connection is kept, and a module in flight beside it is applied', () =>
  withBundles(
    async ({ m, client }) => {
      // web's request is held until nofiles' comes on the same connection; nofiles is answered with no
      // file, then web's is answered in full: web was in flight when the engine left nofiles' file out.
      const held: { req: FakeRequest; write: (line: string) => void }[] = [];
      const answerFully = (req: FakeRequest) =>
        JSON.stringify({ id: req.id, ok: true, files: req.files.map((f) => ({ path: f.path, action: 'written' })) }) + '\n';
      const fake = await fakeEngine(m.socketPath, (req, write) => {
        if (req.module === 'web') return void held.push({ req, write });
        if (req.module !== 'nofiles') return answerFully(req);
        write(JSON.stringify({ id: req.id, ok: true, files: [] }) + '\n');
        for (const h of held.splice(0)) h.write(answerFully(h.req));
        return undefined;
      });
      // The new socket is a knock, which sends every module again; seen before the modules exist, it
      // cannot resend one of them in the middle of the test.
      await client.waitForLog(/engine knocked/);
      try {
        await oneFile(m, 'web', 'w\n');
        await waitFor('web in flight at the engine', () => held.length > 0);
        await oneFile(m, 'nofiles', 'n\n');
        await m.waitReport('n1', 'web', (r) => r.state === 'applied');
        const nofiles = await m.waitReport('n1', 'nofiles', (r) => r.state === 'waiting');
        assert.match(nofiles.reason!, /engine did not confirm \/\S*\/nofiles\.conf; waiting for a knock/);
        assert.equal(
          nofiles.files.map((f) => f.action),
          ['pending'],
        );
        assert.is(fake.connections, 1, 'the connection was never dropped');
        assert.not.match(client.stderr(), /protocol error|dropping the connection/);
      } finally {
        fake.close();
      }
    },
    { engine: false },
  ));

test('#11 an engine reply naming a file it was not sent is a protocol error: the module waits with the reason', () =>
  withBundles(
    async ({ m, client }) => {
      const liar = await fakeEngine(
        m.socketPath,
        (req) => JSON.stringify({ id: req.id, ok: true, files: [{ path: '/etc/shadow', action: 'written' }] }) + '\n',
      );
      await client.waitForLog(/engine knocked/);
      try {
        await oneFile(m, 'liar', 'y\n');
        assert.match((await m.waitReport('n1', 'liar', (r) => r.state === 'waiting')).reason!, /engine replied for "\/etc\/shadow", which it was not sent/);
      } finally {
        liar.close();
      }
    },
    { engine: false },
  ));

test('#10 a 100 MB reply line from the engine is cut off at the limit; the client stays small', () =>
  withBundles(
    async ({ m, client }) => {
      const huge = await fakeEngine(m.socketPath, () => 'x'.repeat(100 * 1024 * 1024) + '\n');
      try {
        await oneFile(m, 'flood', 'x\n');
        const r = await m.waitReport('n1', 'flood', (x) => x.state === 'waiting', 20_000);
        assert.match(r.reason!, /past the limit of 67108864 bytes|67108864/);
        const peak = peakMiB(client.child.pid);
        assert.ok(peak < 400, `client peak RSS ${peak.toFixed(0)} MiB`);
        console.log(`hostile: 100 MB engine reply line → client peak RSS ${peak.toFixed(0)} MiB`);
      } finally {
        huge.close();
      }
    },
    { engine: false },
  ));

test.run();
