// Terminal escapes from the bus (issue 18 item 11, DESIGN §3): a node's own report, an archive's
// entry name and a provider's refusal hold ESC sequences (clear screen, window title, clipboard),
// CR + erase line, DEL, C1 CSI, U+2028, a bidi override and a newline before a forged line. The
// bundles — `status`, `query`, the client's `lint` and `--once` — print them as visible escapes on
// exactly the lines a plain value gives, and `--json` parses back to the exact stored text.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { APPLIED } from '../src/shared/contract/buckets.ts';
import { ensureKv } from '../src/shared/bus/bus.ts';
import type { Report } from '../src/shared/contract/report.ts';
import { boundBucket } from '../src/server/commands/bus-config/config.ts';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { packTemplates } from './helpers/archive.ts';
import { cleanupBundles, copyBundleAlone, ensureBuilt, runBundle } from './helpers/bundle.ts';
import { withIsolatedMesh, type IsolatedMesh } from './helpers/isolated-mesh.ts';
import { waitFor } from './helpers/wait.ts';
import { tempDir as newTempDir } from './helpers/temp.ts';

/** What the attacker wrote: clear screen, title, clipboard, CR + erase line, DEL, C1 CSI, U+2028, RLO, and a forged line. */
const HOSTILE = '\x1b[2J\x1b]0;owned\x07\x1b]52;c;Zm9yZ2Vk\x07\r\x1b[K\x7f\x9b2J\u2028\u202e\nn1      5        0        0';
/** The same attack as the escapes an operator sees. */
const SHOWN = '\\x1b[2J\\x1b]0;owned\\x07\\x1b]52;c;Zm9yZ2Vk\\x07\\x0d\\x1b[K\\x7f\\x9b2J\\u2028\\u202e\\x0an1      5        0        0';
const DIGEST = `sha256:${'c'.repeat(64)}`;

const dirs: string[] = [];
test.after(() => {
  cleanupBundles();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = newTempDir('mesh-terminal-');
  dirs.push(dir);
  return dir;
}

/**
 * Where output breaks the rule, or undefined: a C0 byte other than the newline ending each line, DEL,
 * C1, a line separator, a bidi control, or U+FFFD (what a lone surrogate or a cut UTF-8 sequence becomes).
 */
function unsafeAt(output: string): string | undefined {
  for (const [at, c] of [...output].entries()) {
    const code = c.codePointAt(0)!;
    if (c === '\n') continue;
    if (
      code <= 0x1f ||
      (code >= 0x7f && code <= 0x9f) ||
      code === 0x2028 ||
      code === 0x2029 ||
      code === 0x061c ||
      code === 0x200e ||
      code === 0x200f ||
      (code >= 0x202a && code <= 0x202e) ||
      (code >= 0x2066 && code <= 0x2069) ||
      code === 0xfffd
    ) {
      return `U+${code.toString(16).padStart(4, '0')} at ${at} in ${JSON.stringify(output)}`;
    }
  }
  return undefined;
}

function assertSafe(output: string, what: string): void {
  const at = unsafeAt(output);
  assert.is(at, undefined, `${what}: ${at}`);
}

/** Every string inside a parsed JSON value. */
function stringsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (typeof value !== 'object' || value === null) return [];
  return Object.values(value).flatMap(stringsOf);
}

/** n1's report of web, every field an operator is shown holding `text`. */
function report(text: string): Report {
  return {
    node: 'n1',
    module: 'web',
    build: text,
    state: 'waiting',
    files: [{ path: `/etc/web/${text}`, action: 'written', digest: DIGEST }],
    waiting: [{ kind: 'config', name: text, files: [`/etc/web/${text}`] }],
    reason: text,
    at: new Date().toISOString(),
  };
}

/** Writes the report as n1's client may: its own key of the applied bucket, with its own login. */
async function putOwnReport(nc: NatsConnection, value: Report): Promise<void> {
  await jetstream(nc).publish(`$KV.${APPLIED}.n1.web`, JSON.stringify(value));
}

const COMMANDS = [['status'], ['status', 'n1'], ['status', 'n1', 'web'], ['query', 'applied']];

test('status, status n1, status n1 web and query applied print a node’s hostile report escaped, on as many lines as a plain one; --json gives back the exact text', () =>
  withIsolatedMesh({ nodes: ['n1'] }, async (m) => {
    const n1 = await m.connect(USERS.client('n1'));
    const run = (args: string[]) => m.serverCommand(USERS.seat, args);
    await putOwnReport(n1, report('plain'));
    await waitFor('the plain report at the seat', async () => (await run(['query', 'applied'])).stdout.includes('plain'));
    const plainLines = new Map<string, number>();
    for (const args of COMMANDS) plainLines.set(args.join(' '), (await run(args)).stdout.split('\n').length);

    const hostile = report(HOSTILE);
    await putOwnReport(n1, hostile);
    await waitFor('the hostile report at the seat', async () => (await run(['query', 'applied', '--json'])).stdout.includes('owned'));
    for (const args of COMMANDS) {
      const name = args.join(' ');
      const shown = await run(args);
      assert.ok(shown.code === 0 || shown.code === 1, `${name}: exit ${shown.code}: ${shown.stderr}`);
      assertSafe(shown.stdout, name);
      assertSafe(shown.stderr, `${name} (stderr)`);
      assert.is(shown.stdout.split('\n').length, plainLines.get(name), `${name}: no forged line:\n${shown.stdout}`);
      assert.ok(shown.stdout.includes(SHOWN), `${name} shows the text, escaped:\n${shown.stdout}`);

      const json = await run([...args, '--json']);
      assertSafe(json.stdout, `${name} --json`);
      assert.is(json.stdout.split('\n').length, 2, `${name} --json: one line`);
      assert.ok(
        stringsOf(JSON.parse(json.stdout)).some((text) => text.includes(HOSTILE)),
        `${name} --json holds the exact stored text: ${json.stdout}`,
      );
    }
    const query = JSON.parse((await run(['query', 'applied', '--json'])).stdout) as { entries: { key: string; value: Report }[] };
    assert.equal(query.entries, [{ key: 'n1.web', value: hostile }]);
    const detail = JSON.parse((await run(['status', 'n1', '--json'])).stdout) as {
      modules: { build: string; reason: string; files: { path: string }[]; waiting: { name: string }[] }[];
    };
    const [web] = detail.modules;
    assert.equal([web?.build, web?.reason, web?.files[0]?.path, web?.waiting[0]?.name], [HOSTILE, HOSTILE, `/etc/web/${HOSTILE}`, HOSTILE]);
  }));

test('lint of an archive whose entry name and placeholder hold ESC and a newline prints them escaped, one line each; --json gives back the name', async () => {
  ensureBuilt('client');
  const bundle = copyBundleAlone('client');
  const dir = tempDir();
  const name = 'web\x1b]0;x\x07\x9b\nerror: forged.conf:1: all good';
  const body = 'listen ${port:http}\nv=${config:a\x1b[2J\x7fb}\n';
  writeFileSync(join(dir, 'hostile.tar'), await packTemplates({ [name]: body }));
  writeFileSync(join(dir, 'plain.tar'), await packTemplates({ 'web.conf': 'listen ${port:http}\nv=${config:ab}\n' }));
  const plain = await runBundle('node', bundle, 'client', ['lint', join(dir, 'plain.tar')]);
  const hostile = await runBundle('node', bundle, 'client', ['lint', join(dir, 'hostile.tar')]);
  assert.is(hostile.code, plain.code, hostile.stderr);
  assertSafe(hostile.stdout, 'lint');
  assertSafe(hostile.stderr, 'lint (stderr)');
  assert.is(hostile.stdout.split('\n').length, plain.stdout.split('\n').length, hostile.stdout);
  assert.ok(hostile.stdout.includes('web\\x1b]0;x\\x07\\x9b\\x0aerror: forged.conf:1: all good:1 ${port:http}'), hostile.stdout);
  assert.ok(hostile.stdout.includes('${config:a\\x1b[2J\\x7fb}'), hostile.stdout);
  const json = await runBundle('node', bundle, 'client', ['lint', join(dir, 'hostile.tar'), '--json']);
  assertSafe(json.stdout, 'lint --json');
  const parsed = JSON.parse(json.stdout) as { templates: { name: string; placeholders: { name: string }[] }[] };
  assert.equal([parsed.templates[0]?.name, parsed.templates[0]?.placeholders[1]?.name], [name, 'a\x1b[2J\x7fb']);
});

test('a provider’s {refused} text reaches the client bundle’s log and its --once lines escaped, never raw', () =>
  withIsolatedMesh({ nodes: ['n1'], providers: ['pg'] }, async (m) => {
    const bound = await ensureKv(m.admin, boundBucket('pg'), 1);
    const refusal = `\x1b]0;x\x07${HOSTILE}\n<3>n1.web: applied`;
    await bound.put('n1.web.database', JSON.stringify({ refused: refusal }));
    await m.publish('web', {
      templates: { 'web.conf': 'user=${bound:database:user}\n' },
      provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf' }], provisions: [{ provider: 'pg', provision: 'database' }] },
    });
    await m.assign('n1', 'web');
    await waitFor('n1’s plan of web', async () => (await m.kv.plans.get('n1.web'))?.operation === 'PUT');
    ensureBuilt('client');
    const bundle = copyBundleAlone('client');
    const dir = tempDir();
    const once = await runBundle(
      'node',
      bundle,
      'client',
      [
        '--node',
        'n1',
        '--once',
        '--timeout',
        '20',
        '--nats',
        m.nats.url,
        '--nkey',
        m.nkey(USERS.client('n1')),
        '--socket',
        join(dir, 'fill.sock'),
        '--cache',
        join(dir, 'cache'),
        '--archive-dir',
        m.archiveDir,
      ],
      {},
      30_000,
    );
    assert.is(once.code, 1, once.stderr);
    assertSafe(once.stdout, '--once stdout');
    assertSafe(once.stderr, '--once stderr (the log and the lines)');
    const failedLog = once.stderr.split('\n').filter((line) => / error n1\.web: failed/.test(line));
    assert.is(failedLog.length, 1, once.stderr);
    assert.ok(failedLog[0]!.includes(`the provider refused: \\x1b]0;x\\x07${SHOWN}\\x0a<3>n1.web: applied`), failedLog[0]);
    assert.ok(
      once.stderr.split('\n').some((line) => line.startsWith('node-provisioner: web: failed') && line.includes(SHOWN)),
      once.stderr,
    );
    const stored = await m.waitReport('n1', 'web', (r) => r.state === 'failed');
    assert.ok(stored.reason?.includes(refusal), 'the report keeps the exact text');
  }));

test.run();
