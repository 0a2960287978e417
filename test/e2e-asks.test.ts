// Runtime asks end to end (DESIGN §7 point 13): the SDK's ask and watch against the client bundle on
// a real nats-server — values from the client's memory, prov.changed on every change, errors with
// the reason, never a secret or a consumers credential.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { NatsConnection } from '@nats-io/transport-node';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { askSubject, changedSubject } from '../src/shared/contract/subjects.ts';
import { connectBus } from '../src/shared/bus/bus.ts';
import { asker, AskError } from '../src/sdk/ask.ts';
import { ensureBuilt, type Running } from './helpers/bundle.ts';
import { startMesh, type Mesh } from './helpers/mesh.ts';
import { startNats } from './helpers/nats.ts';
import { waitFor } from './helpers/wait.ts';

test.before(() => ensureBuilt('client'));

/** A mesh whose node n1 runs the client bundle with modules `web` (config, bound, placement) and `api`. */
async function withAsks(fn: (m: Mesh, client: () => Running) => Promise<void>): Promise<void> {
  const m = await startMesh();
  let client: Running | undefined;
  try {
    await m.publish('web', {
      templates: { t: 'level ${config:level} port ${port:http} key ${secret:k}\n' },
      provisioning: { files: [{ path: '${dir:config}/t', template: 't' }], secrets: [{ name: 'k' }], provides: [{ provision: 'database' }] },
    });
    await m.publish('api', { templates: { t: 'x' }, provisioning: { files: [{ path: '${dir:config}/t', template: 't' }] } });
    await m.setConfig('n1', 'web', 'level', 'info');
    await m.setConfig('n1', 'web', 'odd', 'a "quoted" ${value}\n');
    await m.assign('n1', 'web');
    await m.assign('n1', 'api');
    client = m.startClientProcess();
    await client.waitForLog(/client ready/);
    await fn(m, () => client!);
  } finally {
    client?.kill();
    await m.close();
  }
}

/** A raw ask, as any connection could send it. */
async function raw(nc: NatsConnection, body: unknown): Promise<Record<string, unknown>> {
  const data = typeof body === 'string' ? new TextEncoder().encode(body) : jsonBytes(body);
  return (await nc.request(askSubject('n1'), data, { timeout: 3000 })).json();
}

test('ask returns a resolved config value exactly as held, and placement; after a change the module is told and asks the new value', () =>
  withAsks(async (m) => {
    const web = asker({ nc: m.nc, node: 'n1', module: 'web' });
    assert.is(await web.ask('config', 'level'), 'info');
    assert.is(await web.ask('config', 'odd'), 'a "quoted" ${value}\n');
    assert.is(await web.ask('port', 'http'), '8080');
    const seen: (string | AskError)[] = [];
    const watching = web.watch('config', 'level', (v) => seen.push(v));
    await waitFor('the first value', () => seen.length >= 1);
    await m.setConfig('n1', 'web', 'level', 'debug');
    await waitFor('the changed value', () => seen.includes('debug'));
    watching.stop();
    assert.equal(
      seen.filter((v) => v instanceof AskError),
      [],
    );
  }));

test('an unassigned module, an unresolved key, a secret, a consumers credential, an unaskable kind and a malformed request each get {error} with the reason', () =>
  withAsks(async (m) => {
    const rows: [unknown, RegExp][] = [
      [{ module: 'ghost', kind: 'config', key: 'level' }, /module "ghost" is not assigned to this node/],
      [
        { module: 'web', kind: 'config', key: 'missing' },
        /^config "missing" is not resolved for web on node n1: set it with `server\.js config set n1 web missing VALUE`$/,
      ],
      [
        { module: 'web', kind: 'config', key: 'levl' },
        /^config "levl" is not resolved for web on node n1 \(did you mean "level"\?\): set it with `server\.js config set n1 web levl VALUE`$/,
      ],
      [
        { module: 'api', kind: 'config', key: 'level' },
        /^config "level" is not resolved for api on node n1: set it with `server\.js config set n1 api level VALUE`$/,
      ],
      [{ module: 'web', kind: 'secret', key: 'k' }, /a secret is never answered/],
      [{ module: 'web', kind: 'consumers', key: 'database' }, /consumers' credentials are never answered/],
      [{ module: 'web', kind: 'shell', key: 'zsh:normal' }, /kind "shell" cannot be asked/],
      [{ module: 'web', kind: 'bound', key: 'database:user' }, /the plan has no provision matching "database:user"/],
      ['{"module":', /bad request: not JSON/],
      [{ module: 'web', kind: 'config' }, /bad request: field "key"/],
      [{ module: 'web', kind: 'config', key: 'level', extra: 1 }, /bad request/],
      ['[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]', /bad request: nested deeper/],
      [{ module: 'web', kind: 'config', key: 'x'.repeat(5000) }, /bad request: .*past the limit/],
    ];
    for (const [body, reason] of rows) {
      const reply = await raw(m.nc, body);
      assert.is(reply['value'], undefined, JSON.stringify(body).slice(0, 80));
      assert.match(String(reply['error']), reason, JSON.stringify(body).slice(0, 80));
    }
  }));

test('a client restart says prov.changed for every module; an ask with a reply subject that is not an inbox is ignored', () =>
  withAsks(async (m, client) => {
    const notices: string[] = [];
    const sub = m.nc.subscribe('prov.changed.n1.>', { callback: (_e, msg) => void notices.push(`${msg.subject} ${new TextDecoder().decode(msg.data)}`) });
    await m.nc.flush();
    client().child.kill('SIGTERM');
    await client().exited;
    const again = m.startClientProcess();
    try {
      await again.waitForLog(/client ready/);
      await waitFor(
        'notices for both modules',
        () =>
          notices.some((n) => n.startsWith('prov.changed.n1.web {"kind":"config"}')) &&
          notices.some((n) => n.startsWith('prov.changed.n1.api {"kind":"config"}')),
      );
      assert.ok(
        notices.every((n) => !n.includes('info')),
        'never a value',
      );
      m.nc.publish(askSubject('n1'), jsonBytes({ module: 'web', kind: 'config', key: 'level' }), { reply: '$KV.mesh-provisioner_applied.n1.forged' });
      assert.is(await asker({ nc: m.nc, node: 'n1', module: 'web' }).ask('config', 'level'), 'info', 'asks from an inbox are still answered');
      assert.is(await m.kv.applied.get('n1.forged'), null);
    } finally {
      sub.unsubscribe();
      again.kill();
    }
  }));

test('a new build that moves no askable value says no prov.changed; a placement change says the kinds that moved, not config', () =>
  withAsks(async (m) => {
    const notices: string[] = [];
    const sub = m.nc.subscribe('prov.changed.n1.>', { callback: (_e, msg) => void notices.push(`${msg.subject} ${new TextDecoder().decode(msg.data)}`) });
    await m.nc.flush();
    try {
      await m.publish('api', { build: '2', templates: { t: 'y' }, provisioning: { files: [{ path: '${dir:config}/t', template: 't' }] } });
      await waitFor('api at build 2', async () => (await m.report('n1', 'api'))?.build === '2');
      const web = (await m.kv.plans.get('n1.web'))!.json<{ placement: { dir: Record<string, string>; port: Record<string, number> } }>();
      await m.assign('n1', 'web', { dir: web.placement.dir, port: { http: 8081 } });
      // Said by the same connection after anything api's build said: once it is here, api's would be too.
      await waitFor('the port notice', () => notices.includes('prov.changed.n1.web {"kind":"port"}'));
      assert.is(await asker({ nc: m.nc, node: 'n1', module: 'web' }).ask('port', 'http'), '8081');
      assert.equal(
        notices.filter((n) => n.startsWith('prov.changed.n1.api')),
        [],
        "api's new build moved no askable value",
      );
      // A kind said whole (no key) is the plan's; a config key said is its value's entry rewritten, not the plan's.
      assert.equal(
        notices.filter((n) => !n.includes('"key"')),
        ['prov.changed.n1.web {"kind":"port"}'],
      );
    } finally {
      sub.unsubscribe();
    }
  }));

test("the SDK reads a client's reply and prov.changed within limits: a reply nested deep or not JSON is an AskError saying so; notices of 2 MB, nested deep or not JSON ask nothing", async () => {
  const server = await startNats('max_payload: 4194304');
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  try {
    // A stand-in for the node's client whose replies are set by the test; it counts the asks.
    let answer = '{"value":"v1"}';
    let asks = 0;
    const sub = nc.subscribe(askSubject('n1'), {
      callback: (_e, msg) => {
        asks++;
        msg.respond(new TextEncoder().encode(answer));
      },
    });
    const web = asker({ nc, node: 'n1', module: 'web' });
    const failure = async () =>
      web.ask('config', 'level').then(
        () => undefined,
        (err: unknown) => err,
      );
    answer = '{"value":' + '['.repeat(100) + ']'.repeat(100) + '}';
    const deep = await failure();
    assert.instance(deep, AskError);
    assert.match((deep as Error).message, /^the client answered out of shape: nested deeper than 2 levels$/);
    answer = '{"value":';
    assert.match(((await failure()) as Error).message, /^the client answered out of shape: not JSON$/);
    answer = '{"error":"config \\"level\\" is not resolved for web"}';
    assert.is(((await failure()) as Error).message, 'config "level" is not resolved for web');
    answer = '{"value":"v1"}';

    const seen: (string | AskError)[] = [];
    const watching = web.watch('config', 'level', (v) => seen.push(v));
    await waitFor('the first value', () => seen.length === 1);
    const before = asks;
    const text = (t: string) => new TextEncoder().encode(t);
    for (const data of [
      jsonBytes({ kind: 'config', key: 'level', pad: 'x'.repeat(2 * 1024 * 1024) }),
      text('{"kind":"config","key":' + '['.repeat(100) + ']'.repeat(100) + '}'),
      text('{"kind":"config"'),
    ])
      nc.publish(changedSubject('n1', 'web'), data);
    answer = '{"value":"v2"}';
    nc.publish(changedSubject('n1', 'web'), jsonBytes({ kind: 'config', key: 'level' }));
    await waitFor('the changed value', () => seen.includes('v2'));
    await nc.flush();
    assert.is(asks - before, 1, 'only the notice in shape asked again');
    assert.equal(seen, ['v1', 'v2']);
    watching.stop();
    sub.unsubscribe();
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test('a watch whose ask is in flight when the module stops it or closes the connection calls back nothing more', async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  const moduleNc = await connectBus({ servers: [server.url], name: 'module' });
  try {
    // The stand-in client answers the first ask and holds every later one unanswered.
    let asks = 0;
    const sub = nc.subscribe(askSubject('n1'), { callback: (_e, msg) => void (++asks === 1 && msg.respond(jsonBytes({ value: 'v1' }))) });
    await nc.flush();
    const web = asker({ nc: moduleNc, node: 'n1', module: 'web' });
    const seen: (string | AskError)[] = [];
    const stopped = web.watch('config', 'level', (v) => seen.push(v));
    await waitFor('the first value', () => seen.length === 1);
    const closed = web.watch('config', 'level', (v) => seen.push(v));
    await waitFor('the second watch asked', () => asks === 2);
    nc.publish(changedSubject('n1', 'web'), jsonBytes({ kind: 'config', key: 'level' }));
    await waitFor('both watches asking again', () => asks === 4);
    stopped.stop();
    await moduleNc.close();
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(seen, ['v1'], 'no "connection closed" after the module was done');
    void closed;
    sub.unsubscribe();
  } finally {
    await moduleNc.close().catch(() => {});
    await nc.close();
    await server.cleanup();
  }
});

test('after a bus restart a watch asks an absent client again quietly, hears "no responders" once past absentMs and the value once the client answers; a stopped watch asks nothing more; a plain ask fails at once', async () => {
  const server = await startNats();
  const moduleNc = await connectBus({ servers: [server.url], name: 'module' });
  // A stand-in for the node's client, answering `value`; it counts the asks it hears.
  const standIn = async (value: string) => {
    const nc = await connectBus({ servers: [server.url], name: 'client' });
    let asks = 0;
    nc.subscribe(askSubject('n1'), { callback: (_e, msg) => void (asks++, msg.respond(jsonBytes({ value }))) });
    await nc.flush();
    return { nc, asks: () => asks };
  };
  let client = await standIn('v1');
  try {
    const web = asker({ nc: moduleNc, node: 'n1', module: 'web', absentMs: 1500 });
    const seen: (string | AskError)[] = [];
    const stoppedSeen: (string | AskError)[] = [];
    web.watch('config', 'level', (v) => seen.push(v));
    const stopped = web.watch('config', 'level', (v) => stoppedSeen.push(v));
    await waitFor('the first values', () => seen.length === 1 && stoppedSeen.length === 1);
    const back = (async () => {
      for await (const s of moduleNc.status()) if (s.type === 'reconnect') return Date.now();
      return 0;
    })();
    // The client goes with the bus and stays away after the module is back.
    await client.nc.close();
    await server.stop();
    await server.restart();
    const backAt = await back;
    stopped.stop();
    const plain = await web.ask('config', 'level').then(
      () => undefined,
      (err: unknown) => err,
    );
    assert.instance(plain, AskError);
    assert.match((plain as Error).message, /no responders/);
    assert.ok(Date.now() - backAt < 1000, 'a plain ask fails at once');
    await new Promise((resolve) => setTimeout(resolve, 700));
    assert.equal(seen, ['v1'], 'nothing heard while the client is absent for less than absentMs');
    await waitFor('the absence told', () => seen.length === 2, 10_000);
    assert.ok(Date.now() - backAt >= 1500, 'told only past absentMs');
    assert.instance(seen[1], AskError);
    assert.match((seen[1] as Error).message, /no responders: 'prov\.ask\.n1'/);
    // Past the next ask (at 3.75 s), still absent: told once, not at each ask.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, backAt + 4500 - Date.now())));
    assert.is(seen.length, 2, 'the absence told once');
    // The client comes back without a notice: the watch's next ask gets its value.
    client = await standIn('v2');
    await waitFor('the value once the client answers', () => seen.length === 3, 10_000);
    assert.is(seen[2], 'v2');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.is(client.asks(), 1, 'the stopped watch asked nothing, and the answered one stopped asking');
    assert.equal(stoppedSeen, ['v1']);
  } finally {
    await moduleNc.close();
    await client.nc.close();
    await server.cleanup();
  }
});

test("a watch started before its node's client hears the value once the client is up, not 'no responders' first; a refusal is heard at once", async () => {
  const server = await startNats();
  const moduleNc = await connectBus({ servers: [server.url], name: 'module' });
  const clientNc = await connectBus({ servers: [server.url], name: 'client' });
  try {
    const web = asker({ nc: moduleNc, node: 'n1', module: 'web', absentMs: 5000 });
    const seen: (string | AskError)[] = [];
    web.watch('config', 'level', (v) => seen.push(v));
    await new Promise((resolve) => setTimeout(resolve, 1200));
    assert.equal(seen, [], 'nothing heard while the client is not up yet');
    clientNc.subscribe(askSubject('n1'), {
      callback: (_e, msg) => void msg.respond(jsonBytes(msg.json<{ key: string }>().key === 'level' ? { value: 'v1' } : { error: 'no such key' })),
    });
    await clientNc.flush();
    await waitFor('the value', () => seen.length === 1, 10_000);
    assert.equal(seen, ['v1']);
    // The client there and refusing: heard at once, as the client's own answer.
    const refused: (string | AskError)[] = [];
    web.watch('config', 'nope', (v) => refused.push(v));
    await waitFor('the refusal', () => refused.length === 1, 3000);
    assert.match((refused[0] as Error).message, /no such key/);
  } finally {
    await moduleNc.close();
    await clientNc.close();
    await server.cleanup();
  }
});

test.run();
