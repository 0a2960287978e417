// The client's end of the fill socket (DESIGN §9) against a fake engine on a real unix socket: timeouts,
// garbage, replies that do not confirm what was sent, a line past the limit, and knocks after a stall.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rmSync, utimesSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { EngineProtocolError, EngineTimeout, EngineUnavailable } from '../src/client/handoff/engine-errors.ts';
import { createEngineClient, type EngineClient } from '../src/client/handoff/fill-socket.ts';
import { contentDigest, unconfirmedPaths, type FillFile, type FillReply } from '../src/shared/contract/fill-protocol.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { tempDir } from './helpers/temp.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

type Request = { id: number; module: string; files: { path: string }[] };
type Conn = { socket: Socket; requests: Request[]; closed: boolean };
/** What the fake engine does with a request: write lines back, or nothing. */
type Behaviour = (req: Request, conn: Conn, index: number) => void;

type Fake = {
  socketPath: string;
  conns: Conn[];
  behave: Behaviour;
  client: EngineClient;
  log: ReturnType<typeof memoryLogger>;
  close(): Promise<void>;
};

const answerAll: Behaviour = (req, conn) => send(conn, { id: req.id, ok: true, files: req.files.map((f) => ({ path: f.path, action: 'written' })) });

function send(conn: Conn, reply: unknown): void {
  conn.socket.write(JSON.stringify(reply) + '\n');
}

/** A fake engine on a unix socket in a temp dir, and a client on it. */
async function fake(behave: Behaviour, clientOpts: { timeoutMs?: number; maxLineBytes?: number } = {}): Promise<Fake> {
  const dir = tempDir('engine-socket-');
  const socketPath = join(dir, 'fill.sock');
  const conns: Conn[] = [];
  const log = memoryLogger();
  const f: Fake = {
    socketPath,
    conns,
    behave,
    log,
    client: undefined as unknown as EngineClient,
    close: async () => {
      f.client.close();
      for (const c of conns) c.socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  const server: Server = createServer((socket) => {
    const conn: Conn = { socket, requests: [], closed: false };
    const index = conns.push(conn) - 1;
    socket.on('close', () => {
      conn.closed = true;
    });
    socket.on('error', () => {});
    let buffered = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        const req = JSON.parse(line) as Request;
        conn.requests.push(req);
        f.behave(req, conn, index);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  f.client = createEngineClient({ socketPath, log, pollMs: 20, ...clientOpts });
  return f;
}

function file(path: string): FillFile {
  return { path, content: 'x', digest: contentDigest('x'), mode: 'owned', change: 'none' };
}

function request(...paths: string[]) {
  return { module: 'web', build: 'b1', files: paths.map(file) };
}

function settled<T>(p: Promise<T>): Promise<{ value?: T; error?: unknown; ms: number }> {
  const started = Date.now();
  return p.then(
    (value) => ({ value, ms: Date.now() - started }),
    (error: unknown) => ({ error, ms: Date.now() - started }),
  );
}

async function until(what: string, check: () => boolean, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${what}`);
    await new Promise((s) => setTimeout(s, 10));
  }
}

function paths(reply: FillReply | undefined): string[] {
  return reply && reply.ok ? reply.files.map((f) => f.path) : [];
}

test('a silent engine gives EngineTimeout after the timeout, and the next request goes on a new connection and is answered', async () => {
  const f = await fake(
    (req, conn, index) => {
      if (index > 0) answerAll(req, conn, index);
    },
    { timeoutMs: 300 },
  );
  try {
    const first = await settled(f.client.fill(request('/etc/a.conf')));
    assert.instance(first.error, EngineTimeout);
    const err = first.error as EngineTimeout;
    assert.match(err.message, new RegExp(`engine ${f.socketPath} did not answer the fill of web within 300 ms`));
    assert.is(err.timeoutMs, 300);
    assert.ok(first.ms >= 290 && first.ms < 2000, `${first.ms} ms`);
    await until('the first connection dropped', () => f.conns[0]!.closed);
    const second = await settled(f.client.fill(request('/etc/a.conf')));
    assert.equal(paths(second.value), ['/etc/a.conf']);
    assert.is(f.conns.length, 2);
  } finally {
    await f.close();
  }
});

test('a timeout drops the connection, and every other request in flight on it is rejected with EngineUnavailable at once', async () => {
  const f = await fake(() => {}, { timeoutMs: 300 });
  try {
    const first = settled(f.client.fill(request('/a')));
    await new Promise((s) => setTimeout(s, 150));
    const second = settled(f.client.fill(request('/b')));
    const [a, b] = await Promise.all([first, second]);
    assert.instance(a.error, EngineTimeout);
    assert.instance(b.error, EngineUnavailable);
    assert.match((b.error as Error).message, /dropped after a request went unanswered for 300 ms/);
    assert.ok(b.ms < 290, `the second waited ${b.ms} ms, not its own timeout`);
  } finally {
    await f.close();
  }
});

test('garbage lines and a reply for an unknown id are ignored, said once and counted, and the valid reply then resolves', async () => {
  const f = await fake(
    (req, conn) => {
      conn.socket.write('not json at all\n\n{"half":\n[1,2,3]\n{"id":"7","ok":true}\n');
      send(conn, { id: req.id + 1000, ok: true, files: [] });
      send(conn, { id: null, ok: false, error: 'which one?' });
      for (let i = 0; i < 12; i++) conn.socket.write('}}}garbage\n');
      answerAll(req, conn, 0);
    },
    { timeoutMs: 2000 },
  );
  try {
    const reply = await f.client.fill(request('/etc/a.conf'));
    assert.equal(paths(reply), ['/etc/a.conf']);
    const said = f.log.lines.filter((l) => /out of shape|no request in flight|lines ignored/.test(l));
    assert.is(said.filter((l) => /further such lines are counted/.test(l)).length, 1, said.join('\n'));
    assert.ok(
      said.some((l) => /10 lines ignored on this connection/.test(l)),
      said.join('\n'),
    );
    assert.ok(said.length <= 3, said.join('\n'));
    assert.is(f.conns.length, 1);
  } finally {
    await f.close();
  }
});

test('a reply with a wrong id leaves the request to its timeout', async () => {
  const f = await fake((req, conn) => send(conn, { id: req.id + 1, ok: true, files: req.files.map((x) => ({ path: x.path, action: 'written' })) }), {
    timeoutMs: 300,
  });
  try {
    const result = await settled(f.client.fill(request('/etc/a.conf')));
    assert.instance(result.error, EngineTimeout);
  } finally {
    await f.close();
  }
});

test('a reply line past the limit rejects the request with a protocol error naming the limit, drops the connection and keeps none of the line', async () => {
  // Large enough that a kept line stands out of the socket buffers this process holds for the fake engine.
  const limit = 4 * 1024 * 1024;
  let sent = 0;
  const f = await fake(
    (_req, conn) => {
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      const pump = () => {
        while (!conn.closed && sent < 20 * limit) {
          sent += chunk.length;
          if (!conn.socket.write(chunk)) return void conn.socket.once('drain', pump);
        }
      };
      pump();
    },
    { timeoutMs: 10_000, maxLineBytes: limit },
  );
  try {
    gc();
    const before = process.memoryUsage().arrayBuffers;
    const result = await settled(f.client.fill(request('/etc/a.conf')));
    assert.instance(result.error, EngineProtocolError);
    assert.match((result.error as Error).message, new RegExp(`reply line past the limit of ${limit} bytes`));
    await until('the connection dropped', () => f.conns[0]!.closed);
    assert.ok(sent < 8 * limit, `the fake sent ${sent} bytes before the client dropped it`);
    // Sockets closed in this turn free their read buffers only once their handles are closed.
    await new Promise((r) => setTimeout(r, 100));
    gc();
    gc();
    const kept = process.memoryUsage().arrayBuffers - before;
    assert.ok(kept < limit / 2, `${kept} bytes kept after the drop`);
    f.behave = answerAll;
    assert.equal(paths(await f.client.fill(request('/etc/a.conf'))), ['/etc/a.conf']);
  } finally {
    await f.close();
  }
});

test('ok:true with no files resolves with nothing confirmed, and the connection is kept: the request in flight beside it is answered', async () => {
  let held: Request | undefined;
  const f = await fake((req, conn) => {
    if (req.files[0]!.path === '/etc/web.conf') return void (held = req);
    send(conn, { id: req.id, ok: true, files: [] });
    if (held) answerAll(held, conn, 0);
  });
  try {
    const web = settled(f.client.fill(request('/etc/web.conf')));
    await until('web in flight', () => held !== undefined);
    const none = await settled(f.client.fill(request('/etc/none.conf')));
    assert.is(none.error, undefined);
    assert.equal(paths(none.value), []);
    assert.equal(unconfirmedPaths(none.value!, ['/etc/none.conf']), ['/etc/none.conf']);
    assert.equal(paths((await web).value), ['/etc/web.conf'], 'the request in flight on the same connection is answered');
    assert.is(f.conns.length, 1);
    assert.not.ok(f.conns[0]!.closed, 'the connection is kept');
  } finally {
    await f.close();
  }
});

test('a reply confirming one file of two resolves, leaving the other unconfirmed; one naming a file twice is a protocol error', async () => {
  const f = await fake((req, conn) => send(conn, { id: req.id, ok: true, files: [{ path: req.files[0]!.path, action: 'written' }] }));
  try {
    const partial = await settled(f.client.fill(request('/etc/a.conf', '/etc/b.conf')));
    assert.equal(paths(partial.value), ['/etc/a.conf']);
    assert.equal(unconfirmedPaths(partial.value!, ['/etc/a.conf', '/etc/b.conf']), ['/etc/b.conf']);
    f.behave = (req, conn) => send(conn, { id: req.id, ok: true, files: [req.files[0], req.files[0]].map((x) => ({ path: x!.path, action: 'written' })) });
    const twice = await settled(f.client.fill(request('/etc/a.conf')));
    assert.instance(twice.error, EngineProtocolError);
    assert.match((twice.error as Error).message, /named \/etc\/a\.conf more often than it was sent/);
    await until('the connection dropped', () => f.conns[0]!.closed);
  } finally {
    await f.close();
  }
});

test('a reply naming a path it was not sent is a protocol error, and the other request in flight goes with the connection', async () => {
  const f = await fake((req, conn) => {
    if (req.files[0]!.path === '/etc/slow.conf') return;
    send(conn, { id: req.id, ok: true, files: [...req.files.map((x) => ({ path: x.path, action: 'written' })), { path: '/etc/shadow', action: 'written' }] });
  });
  try {
    const slow = settled(f.client.fill(request('/etc/slow.conf')));
    const bad = await settled(f.client.fill(request('/etc/a.conf')));
    assert.instance(bad.error, EngineProtocolError);
    assert.is((bad.error as Error).message, 'engine replied for "/etc/shadow", which it was not sent');
    assert.instance((await slow).error, EngineUnavailable);
    f.behave = answerAll;
    assert.equal(paths(await f.client.fill(request('/etc/a.conf'))), ['/etc/a.conf']);
    assert.is(f.conns.length, 2);
  } finally {
    await f.close();
  }
});

test("an ok:false reply for the request resolves with the engine's error", async () => {
  const f = await fake((req, conn) => send(conn, { id: req.id, ok: false, error: 'disk full' }));
  try {
    assert.equal(await f.client.fill(request('/etc/a.conf')), { id: 1, ok: false, error: 'disk full' });
  } finally {
    await f.close();
  }
});

test('40 requests stuck on a connection are dropped by a knock, and a new request is answered on a fresh connection', async () => {
  const f = await fake((req, conn, index) => {
    if (index > 0) answerAll(req, conn, index);
  });
  try {
    // The creation knock is seen first: requests sent after it are not the ones a knock gives up.
    await new Promise((s) => setTimeout(s, 100));
    const stuck = Array.from({ length: 40 }, (_, i) => settled(f.client.fill(request(`/etc/m${i}.conf`))));
    await until('40 requests at the engine', () => f.conns[0]?.requests.length === 40);
    const knockedAt = Date.now() / 1000 + 0.01;
    const knocked = new Promise<void>((resolve) => f.client.onKnock(resolve));
    utimesSync(f.socketPath, knockedAt, knockedAt);
    await knocked;
    const results = await Promise.all(stuck);
    for (const r of results) assert.instance(r.error, EngineUnavailable);
    assert.ok(
      results.every((r) => r.ms < 5000),
      'the stuck requests did not wait for their 30 s timeout',
    );
    assert.equal(paths(await f.client.fill(request('/etc/new.conf'))), ['/etc/new.conf']);
    assert.is(f.conns.length, 2);
  } finally {
    await f.close();
  }
});

test('a knock does not drop a connection whose requests were all sent after it', async () => {
  let hold: (() => void) | undefined;
  const f = await fake((req, conn) => {
    hold = () => answerAll(req, conn, 0);
  });
  try {
    const pending = settled(f.client.fill(request('/etc/a.conf')));
    await until('the request at the engine', () => hold !== undefined);
    const past = Date.now() / 1000 - 5;
    const knocked = new Promise<void>((resolve) => f.client.onKnock(resolve));
    utimesSync(f.socketPath, past, past);
    await knocked;
    hold!();
    assert.equal(paths((await pending).value), ['/etc/a.conf']);
    assert.is(f.conns.length, 1);
  } finally {
    await f.close();
  }
});

test.run();
