// The client's ping of its engine (DESIGN §9, §14), against a scripted engine on a real unix socket:
// any reply with the ping's id proves the engine up, silence or no socket proves it down, and a ping's
// reply is never taken for a fill's on the same connection. Each fill's outcome proves the same.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngineClient, type EngineClient } from '../src/client/handoff/fill-socket.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { contentDigest } from '../src/shared/contract/fill-protocol.ts';
import { tempDir } from './helpers/temp.ts';

type Line = { id: number; op: string; files?: { path: string }[] };

/** A scripted engine: `answer` is called with each request line and the socket, and writes what it likes. */
async function scripted(answer: (req: Line, sock: Socket) => void) {
  const dir = tempDir('engine-ping-');
  const socketPath = join(dir, 'fill.sock');
  const server: Server = createServer((sock) => {
    let buf = '';
    sock.setEncoding('utf8').on('data', (d: string) => {
      buf += d;
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = JSON.parse(buf.slice(0, nl)) as Line;
        buf = buf.slice(nl + 1);
        answer(line, sock);
      }
    });
  });
  await new Promise<void>((r) => server.listen(socketPath, r));
  const log = memoryLogger();
  const proofs: string[] = [];
  const client: EngineClient = createEngineClient({ socketPath, log, timeoutMs: 300, pollMs: 50 });
  client.onProof?.((p) => proofs.push(p));
  return {
    client,
    proofs,
    log,
    async close() {
      client.close();
      await new Promise<void>((r) => server.close(() => r()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const send = (sock: Socket, value: unknown) => sock.write(JSON.stringify(value) + '\n');
const web = {
  module: 'web',
  build: '1',
  files: [{ path: '/etc/web.conf', content: 'x', digest: contentDigest('x'), mode: 'owned' as const, change: 'none' as const }],
};

test('a ping answered {id, ok:true} is up; one answered with an error reply (an engine that knows no ping) is up too', async () => {
  for (const reply of [(id: number) => ({ id, ok: true }), (id: number) => ({ id, ok: false, error: 'field "op" must be "fill"' })]) {
    const e = await scripted((req, sock) => send(sock, reply(req.id)));
    try {
      assert.is(await e.client.ping!(), 'up');
      assert.equal(e.proofs, ['up']);
    } finally {
      await e.close();
    }
  }
});

test("a ping's reply on the connection of a fill in flight settles the ping alone; the fill takes its own reply", async () => {
  let fillReply: (() => void) | undefined;
  const e = await scripted((req, sock) => {
    if (req.op === 'ping') return send(sock, { id: req.id, ok: true });
    // The fill is answered only after the ping's reply went by.
    fillReply = () => send(sock, { id: req.id, ok: true, files: [{ path: '/etc/web.conf', action: 'written' }] });
  });
  try {
    const fill = e.client.fill(web);
    // Awaited below; a failure before that is the test's, not an unhandled rejection.
    fill.catch(() => {});
    assert.is(await e.client.ping!(), 'up');
    fillReply!();
    assert.equal(await fill, { id: 1, ok: true, files: [{ path: '/etc/web.conf', action: 'written' }] });
    assert.equal(e.proofs, ['sent', 'up', 'up']);
    assert.not.match(e.log.lines.join('\n'), /ignored|protocol|dropping/);
  } finally {
    await e.close();
  }
});

test('a ping the engine never answers is down after the timeout, the connection dropped; no socket is down at once', async () => {
  const e = await scripted(() => {});
  try {
    const at = Date.now();
    assert.is(await e.client.ping!(), 'down');
    assert.ok(Date.now() - at >= 290, `down after ${Date.now() - at} ms`);
    assert.match(e.log.lines.join('\n'), /no answer to a ping within 300 ms; dropping the connection/);
    assert.is(await e.client.ping!(), 'down');
    assert.is(e.log.lines.filter((l) => /no answer to a ping/.test(l)).length, 1, 'said once while the engine stays silent');
  } finally {
    await e.close();
  }
  const gone = createEngineClient({ socketPath: join(tmpdir(), 'no-such-dir', 'fill.sock'), log: memoryLogger(), timeoutMs: 5000 });
  const at = Date.now();
  assert.is(await gone.ping!(), 'down');
  assert.ok(Date.now() - at < 1000);
  gone.close();
});

test("a fill's reply proves the engine up, a fill given up on timeout proves it down", async () => {
  let answer = true;
  const e = await scripted((req, sock) => {
    if (answer) send(sock, { id: req.id, ok: true, files: [{ path: '/etc/web.conf', action: 'unchanged' }] });
  });
  try {
    await e.client.fill(web);
    answer = false;
    await e.client.fill(web).catch(() => {});
    assert.equal(e.proofs, ['sent', 'up', 'sent', 'down']);
  } finally {
    await e.close();
  }
});

test.run();
