// The input commands (DESIGN §13) on a bus without isolation — a lab, the demo — as the seat's bundle
// copied alone: the buckets they create, a bucket they refuse, the bus's payload limit; their --help;
// and the grammars they check before anything reaches the bus.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { ASSIGNMENTS, CONFIG } from '../src/shared/contract/buckets.ts';
import { parseConfigKey } from '../src/shared/contract/keys.ts';
import { placementFromFlags } from '../src/server/commands/assign/command.ts';
import { configKeyNameProblem } from '../src/server/commands/config/key.ts';
import { readImport } from '../src/server/commands/config/import.ts';
import { openKv } from '../src/shared/bus/bus.ts';
import { configKey } from '../src/shared/contract/keys.ts';
import { cleanupBundles, copyBundleAlone, ensureBuilt, runBundle, type Runtime } from './helpers/bundle.ts';
import { startNats, type NatsServer } from './helpers/nats.ts';
import { SEED } from './helpers/random.ts';

let dir: string;
let nats: NatsServer;
let nc: NatsConnection;

const server = (args: string[], runtime: Runtime = 'node') => runBundle(runtime, dir, 'server', [...args, '--nats', nats.url], {}, 20_000);
const linesOf = (text: string) => text.split('\n').filter((l) => l !== '');

test.before(async () => {
  ensureBuilt('server');
  dir = copyBundleAlone('server');
  nats = await startNats();
  nc = await connect({ servers: nats.url });
});

test.after(async () => {
  await nc.close();
  await nats.cleanup();
  cleanupBundles();
});

test('without isolation, config set and assign create their bucket as init would: its own subject, hardened, bounded; get reads it back under deno too', async () => {
  const set = await server(['config', 'set', 'n1', 'web', 'db.host', 'db-1 é']);
  assert.is(set.code, 0, set.stderr);
  const assign = await server(['assign', 'n1', 'web', '--dir', 'config=/etc/web,a', '--access', 'url=https://x/?a=b,c']);
  assert.is(assign.code, 0, assign.stderr);
  const jsm = await jetstreamManager(nc);
  for (const bucket of [CONFIG, ASSIGNMENTS]) {
    const { config } = await jsm.streams.info(`KV_${bucket}`);
    assert.equal(config.subjects, [`$KV.${bucket}.>`], bucket);
    assert.equal([config.deny_delete, config.deny_purge, config.allow_rollup_hdrs, config.allow_direct], [true, true, false, true], `${bucket} hardened`);
    assert.ok(config.max_consumers > 0, `${bucket} bounds its consumers`);
  }
  const got = await server(['config', 'get', 'n1', 'web', 'db.host'], 'deno');
  assert.is(got.code, 0, got.stderr);
  assert.is(got.stdout, 'db-1 é');
  assert.match(assign.stdout, /placement \{"dir":\{"config":"\/etc\/web,a"\},"access":\{"url":"https:\/\/x\/\?a=b,c"\}\}/, 'a comma stays in its value');
});

test('a value starting with - is set after --, every flag before it, and read back as it is', async () => {
  const set = await runBundle('node', dir, 'server', ['config', 'set', '--nats', nats.url, 'n1', 'web', 'opts', '--', '-x --y=1'], {}, 20_000);
  assert.is(set.code, 0, set.stderr);
  const got = await server(['config', 'get', 'n1', 'web', 'opts']);
  assert.is(got.stdout, '-x --y=1');
});

test('a bucket that holds more than its own subject is refused, naming the bucket and the difference, and nothing is written', async () => {
  const jsm = await jetstreamManager(nc);
  const bucket = 'mesh-controller_assignments';
  await jsm.streams.delete(`KV_${bucket}`).catch(() => {});
  await jsm.streams.add({ name: `KV_${bucket}`, subjects: [`$KV.${bucket}.>`, 'capture.>'], max_msgs_per_subject: 1, allow_direct: true });
  try {
    for (const args of [
      ['assign', 'n1', 'web'],
      ['unassign', 'n1', 'web'],
    ]) {
      const ran = await server(args);
      assert.is(ran.code, 1, ran.stderr);
      assert.equal(linesOf(ran.stderr), [
        `mesh-provisioner: bucket ${bucket} (stream KV_${bucket}) holds "capture.>" besides its own subject $KV.${bucket}.>; has deny_delete false (wants true); has deny_purge false (wants true): refused`,
      ]);
    }
    assert.is((await jsm.streams.info(`KV_${bucket}`)).state.messages, 0, 'nothing written');
  } finally {
    await jsm.streams.delete(`KV_${bucket}`);
  }
});

test('a value past the bus’s max payload is refused with exit 2 naming its key, and nothing of the file is written', async () => {
  const file = join(dir, 'big.json');
  writeFileSync(file, JSON.stringify({ n9: { big: { small: 'x', huge: 'y'.repeat(1_100_000) } } }));
  const ran = await server(['config', 'import', file]);
  assert.is(ran.code, 2, ran.stderr);
  assert.equal(linesOf(ran.stderr), ["mesh-provisioner: n9 big huge: the value is 1100000 bytes, past the bus's max payload of 1048576 bytes"]);
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(`KV_${CONFIG}`, { subjects_filter: `$KV.${CONFIG}.n9.>` });
  assert.is(Object.keys(info.state.subjects ?? {}).length, 0, 'not even the small key');
});

// Runs a command with its stdin, stdout and stderr on a pseudo-terminal, and gives what the terminal received.
const PTY = `
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
out = b''
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
sys.exit(os.waitstatus_to_exitcode(status))
`;

test('config get of one key: to a terminal its control characters and bytes that are not UTF-8 are escaped, a newline after; piped, its bytes exactly', async () => {
  // Written as another writer of mesh-config would: ESC sequences, BEL, a C1 CSI, a lone 0x9b byte, a newline.
  const value = Buffer.concat([Buffer.from('a\x1b[2J\x1b]0;owned\x07b\u009bc'), Buffer.from([0x9b, 0xff]), Buffer.from('é\n')]);
  const set = await server(['config', 'set', 'n1', 'tty', 'k', 'placeholder']);
  assert.is(set.code, 0, set.stderr);
  await (await openKv(nc, CONFIG)).put(configKey('n1', 'tty', 'k'), value);
  const args = [join(dir, 'server.js'), 'config', 'get', 'n1', 'tty', 'k', '--nats', nats.url];
  const tty = spawnSync('python3', ['-c', PTY, process.execPath, ...args], { timeout: 20_000 });
  assert.is(tty.status, 0, String(tty.stderr));
  // The terminal's line discipline writes each newline as CR LF.
  const shown = tty.stdout.toString('latin1').replace(/\r\n/g, '\n');
  assert.is(shown, 'a\\x1b[2J\\x1b]0;owned\\x07b\\x9bc\\x9b\\xff\xc3\xa9\\x0a\n');
  const piped = spawnSync(process.execPath, args, { timeout: 20_000 });
  assert.is(piped.status, 0, String(piped.stderr));
  assert.ok(piped.stdout.equals(value), `piped: the bytes as they are, got ${piped.stdout.toString('hex')}`);
});

test('--help of assign, unassign and config lists their flags and the bus flags; the seat’s --help lists the commands', async () => {
  for (const [command, own] of [
    ['assign', ['--dir NAME=PATH', '--port NAME=N', '--access NAME=VALUE', '--seat NAME=VALUE', '--machine NAME=VALUE']],
    ['unassign', ['--dir NAME=PATH']],
    ['config', ['config import FILE']],
  ] as const) {
    const help = await server([command, '--help']);
    assert.is(help.code, 0, help.stderr);
    for (const text of [...own, '--nats URL', '--nkey FILE', '--replicas N']) assert.ok(help.stdout.includes(text), `${command} --help: ${text}`);
  }
  const all = await server(['--help']);
  for (const text of ['assign NODE MODULE', 'unassign NODE MODULE', 'config set NODE MODULE KEY VALUE']) assert.ok(all.stdout.includes(text), text);
  const bad = await server(['assign', 'n1', 'web', '--bogus']);
  assert.is(bad.code, 2);
  assert.equal(linesOf(bad.stderr), ['mesh-provisioner: unknown flag --bogus (see --help)']);
});

test('placement flags: each namespace by its grammar, a value kept whole, every refusal naming the flag and the name', () => {
  assert.equal(placementFromFlags({ dir: ['config=/etc/web', 'data=/srv/a,b'], port: ['http=8080'], seat: ['rack=r 1=2'] }), {
    ok: true,
    value: { dir: { config: '/etc/web', data: '/srv/a,b' }, port: { http: 8080 }, seat: { rack: 'r 1=2' } },
  });
  const refused: [Parameters<typeof placementFromFlags>[0], string][] = [
    [{ port: ['http=0'] }, '--port http: "0" is not a port number 1–65535'],
    [{ port: ['http=80.5'] }, '--port http: "80.5" is not a port number 1–65535'],
    [{ dir: ['config=/etc/web/'] }, '--dir config: "/etc/web/" ends with /'],
    [{ dir: ['=/etc'] }, '--dir: name "" is not a name a placeholder can hold (not empty, no whitespace, {, } or $, not starting with - + or ?)'],
    [{ access: ['constructor=x'] }, '--access: name "constructor" is a name the seat does not read'],
    [{ machine: ['arch='] }, '--machine arch: is empty'],
    [{ access: ['url=a\nb'] }, '--access url: "a\\nb" holds a control character'],
    [{ dir: ['a=/x', 'a=/y'] }, '--dir: "a" is given twice'],
  ];
  for (const [given, reason] of refused) assert.equal(placementFromFlags(given), { ok: false, reason }, reason);
});

test('every config key the commands accept is a key of the bus that parses back to it; the rest are refused with a reason', () => {
  const part = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }).filter((s) => !s.includes('.'));
  fc.assert(
    fc.property(fc.array(part, { minLength: 1, maxLength: 4 }), (parts) => {
      const key = parts.join('.');
      const problem = configKeyNameProblem(key);
      if (problem !== undefined) return assert.not.ok(problem.includes('\n'), problem);
      assert.equal(parseConfigKey(configKey('n1', 'web', key)), { ok: true, value: { node: 'n1', module: 'web', key } });
    }),
    { numRuns: 500, seed: SEED },
  );
});

test('an import file is read whole into its keys, constructor and prototype among them; its first problem is said', () => {
  const read = readImport(new TextEncoder().encode('{"n1":{"web":{"constructor":"a","prototype":"b","x.y":"c"}},"n2":{}}'));
  assert.equal(read.ok ? read.value.map((e) => `${e.node} ${e.module} ${e.key}=${new TextDecoder().decode(e.value)}`) : read.reason, [
    'n1 web constructor=a',
    'n1 web prototype=b',
    'n1 web x.y=c',
  ]);
  assert.equal(readImport(new TextEncoder().encode('[1]')), { ok: false, reason: "the import file's value is not an object of nodes" });
  assert.equal(readImport(new TextEncoder().encode('{"n1":{"web":"x"}}')), {
    ok: false,
    reason: 'the import file\'s field "n1.web" is not an object of config keys',
  });
  assert.equal(readImport(new TextEncoder().encode('{"n1":{"web":{"k":"\\ud800"}}}')), {
    ok: false,
    reason: 'the import file\'s field "n1.web.k" is not UTF-8 text (a lone surrogate)',
  });
});

test.run();
