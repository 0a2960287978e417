// The reference vault as an operator runs it (DESIGN §11, §13): `dist/vault.js` alone in a dir, on
// the configuration `bus-config` generates, logged in as `vault`. A provider's client gets its
// consumers' credentials, a consumer's node its own, and a third node is refused, by the subject its
// account maps the ask to;
// the bare subject is refused without --lab; a reply that is not an inbox is ignored; a credential
// is made once however many ask at once; its files are 0600 in 0700 dirs; `rotate` reaches the
// provider's consumers file, and run as root writes for the store's owner; a provision's credential
// goes only where its provider is planned; and no value is in any line it logs, at every level.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { VAULT_CREDENTIAL } from '../src/shared/contract/subjects.ts';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { VaultCredentials } from '../src/client/sources/vault.ts';
import { BUSY, serveCredentials, UNKNOWN_ASKER } from '../src/vault/serve.ts';
import { VaultStore } from '../src/vault/store.ts';
import { cleanupBundles, copyBundleAlone, ensureBuilt, runBundle, startBundle, type Running } from './helpers/bundle.ts';
import { startIsolatedMesh, type IsolatedMesh } from './helpers/isolated-mesh.ts';
import { waitFor } from './helpers/wait.ts';
import { tempDir } from './helpers/temp.ts';

const [NA, NB, NC] = ['na', 'nb', 'nc'];
const PROVIDER = 'pg';
/** nb's web, bound on na where pg is planned: its credential goes to na (the provider's node) and nb (the consumer's), to no other. */
const WEB = `pair/${PROVIDER}/database/${NB}/web`;
/** nb's api, bound on na: the name asked at once from many requests. */
const API = `pair/${PROVIDER}/database/${NB}/api`;

let m: IsolatedMesh;
let dir: string;
let store: string;
let vault: Running;
/** Every line the vault and `rotate` wrote, to look for values in. */
const said: string[] = [];

const vaultArgs = () => ['--nats', m.nats.url, '--nkey', m.nkey(USERS.vault), '--store', store];
const consumersFile = () => join(m.node(NA).root, 'etc', PROVIDER, 'consumers.json');
const consumers = (): { consumer: string; module: string; credential: string }[] => {
  try {
    return JSON.parse(readFileSync(consumersFile(), 'utf8'));
  } catch {
    return [];
  }
};
const ask = async (nc: NatsConnection, subject: string, name: string): Promise<{ value?: string; error?: string }> =>
  (await nc.request(subject, jsonBytes({ name }), { timeout: 5000 })).json();

/** Starts the vault bundle (every level logged) and waits for it to say it is ready. */
async function startVault(extra: string[] = []): Promise<Running> {
  const running = startBundle('node', dir, 'vault', [...vaultArgs(), '--debug', ...extra]);
  await running.waitForLog(/vault ready/, 15_000);
  return running;
}

/** A plan of `<node>.<module>` composed by the seat. */
const planned = (node: string, module: string) =>
  waitFor(`plan ${node}.${module}`, async () => (await m.kv.plans.get(`${node}.${module}`))?.operation === 'PUT');

test.before(async () => {
  ensureBuilt('vault');
  dir = copyBundleAlone('vault');
  m = await startIsolatedMesh({ nodes: [NA, NB, NC], providers: [PROVIDER] });
  store = join(m.dir, 'vault-store');
  await m.publish(PROVIDER, {
    templates: { 'consumers.json': '${consumers:database}\n' },
    provisioning: { files: [{ path: '${dir:config}/consumers.json', template: 'consumers.json', change: 'none' }], provides: [{ provision: 'database' }] },
  });
  for (const module of ['web', 'api'])
    await m.publish(module, {
      templates: { t: 'user=${bound:database:user}\n' },
      provisioning: { files: [{ path: '${dir:config}/t', template: 't' }], provisions: [{ provider: PROVIDER, provision: 'database', node: NA }] },
    });
  await m.assign(NA, PROVIDER);
  await m.assign(NB, 'web');
  await m.assign(NB, 'api');
  for (const [node, module] of [
    [NA, PROVIDER],
    [NB, 'web'],
    [NB, 'api'],
  ] as const)
    await planned(node, module);
  vault = await startVault();
});

test.after(async () => {
  vault?.kill();
  await m?.close();
  cleanupBundles();
});

test('--help, --version and a bad flag: exit 0, 0 and 2 with one line', async () => {
  const help = await runBundle('node', dir, 'vault', ['--help']);
  assert.is(help.code, 0);
  assert.match(help.stdout, /usage: node vault\.js --store DIR/);
  assert.match(help.stdout, /rotate NAME/);
  assert.is((await runBundle('node', dir, 'vault', ['--version'])).code, 0);
  for (const args of [['--bogus'], ['--store'], [], ['rotate', '../x', '--store', '/tmp/x'], ['rotate', '--store', '/tmp/x'], ['--store', '/tmp/x', 'extra']]) {
    const bad = await runBundle('node', dir, 'vault', args);
    assert.is(bad.code, 2, `${args.join(' ')}: ${bad.stderr}`);
    assert.is(bad.stderr.trim().split('\n').length, 1, bad.stderr);
    assert.match(bad.stderr, /^mesh-vault: /);
  }
});

test('many asks at once for a credential not yet made make one: every answer the same, the file 0600 in 0700 dirs', async () => {
  const answers = await Promise.all(Array.from({ length: 40 }, () => ask(m.admin, `${VAULT_CREDENTIAL}.${NA}`, API)));
  const values = new Set(answers.map((a) => a.value ?? `error ${a.error}`));
  assert.is(values.size, 1, [...values].join('\n'));
  const [value] = values;
  assert.match(value!, /^[A-Za-z0-9_-]{43}$/);
  assert.is(readFileSync(join(store, ...API.split('/')), 'utf8'), value);
  assert.is(
    vault
      .stderr()
      .split('\n')
      .filter((l) => l.includes(`made ${API}`)).length,
    1,
    vault.stderr(),
  );
  assert.is(statSync(join(store, ...API.split('/'))).mode & 0o777, 0o600);
  for (let at = store, parts = API.split('/').slice(0, -1); ; at = join(at, parts.shift()!)) {
    assert.is(statSync(at).mode & 0o777, 0o700, at);
    if (parts.length === 0) break;
  }
  assert.equal(readdirSync(join(store, ...API.split('/').slice(0, -1))), ['api'], 'no temp file left');
});

test('two stores on one dir, asked at once, make one credential', async () => {
  const [one, two] = [await VaultStore.open(store), await VaultStore.open(store)];
  const name = `pair/${PROVIDER}/database/${NB}/race`;
  const handed = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? one : two).credential(name)));
  const values = new Set(handed.map((h) => (h.ok ? h.value.value : h.reason)));
  assert.is(values.size, 1, [...values].join('\n'));
  assert.is(handed.filter((h) => h.ok && h.value.made).length, 1);
});

test('a provider’s client gets its consumers’ credentials, a consumer’s node its own; a third node asking the same is refused by the subject its account maps the ask to', async () => {
  const na = m.node(NA);
  await na.startEngine();
  await na.startClient();
  await waitFor('the consumers file', () => consumers().length === 2, 20_000);
  const made = readFileSync(join(store, ...WEB.split('/')), 'utf8');
  assert.is(consumers().find((c) => c.module === 'web')?.credential, made);
  assert.ok(vault.stderr().includes(`made ${WEB} on its first ask, by node ${NA}`), vault.stderr());

  // nb, web's node, asks for its own web's credential (as its engine would): the account maps it to
  // mesh-vault.credential.nb, and pg is planned where web binds it. nc, neither, is refused.
  const nb = await m.connect(USERS.client(NB));
  assert.equal(await ask(nb, VAULT_CREDENTIAL, WEB), { value: made });
  const nc = await m.connect(USERS.client(NC));
  assert.equal(await ask(nc, VAULT_CREDENTIAL, WEB), { error: `node ${NC} is neither the consumer (${NB}) nor where ${NB}.web binds ${PROVIDER} (${NA})` });
  assert.equal(await ask(nb, VAULT_CREDENTIAL, 'module/web/api-key'), {
    error: "module/web/api-key is not in the vault (an operator puts a module's secret; none is made)",
  });
  assert.equal(await ask(nb, VAULT_CREDENTIAL, 'module/pg/api-key'), { error: `node ${NB} has no plan of module pg` });
  assert.equal(m.violations(), [], 'the vault’s grants suffice: nothing it or a node’s client did was refused');
});

test('a provision bound on a node where its provider is not planned: the credential is refused to that node, and never made (issue 31 item 9)', async () => {
  // nb's app2 binds pg with no node: its own, where no module pg is planned. Its plan alone would name nb.
  await m.publish('app2', {
    templates: { t: 'user=${bound:database:user}\n' },
    provisioning: { files: [{ path: '${dir:config}/t', template: 't' }], provisions: [{ provider: PROVIDER, provision: 'database' }] },
  });
  await m.assign(NB, 'app2');
  await planned(NB, 'app2');
  const name = `pair/${PROVIDER}/database/${NB}/app2`;
  const nb = await m.connect(USERS.client(NB));
  assert.equal(await ask(nb, VAULT_CREDENTIAL, name), {
    error: `${PROVIDER} is not planned on node ${NB}: it has no plan of module ${PROVIDER} providing database`,
  });
  assert.not.ok(existsSync(join(store, ...name.split('/'))), 'no credential made');
  // na, where pg is planned, is neither app2's node nor the node its plan binds pg on: refused.
  const na = await m.connect(USERS.client(NA));
  assert.equal(await ask(na, VAULT_CREDENTIAL, name), { error: `node ${NA} is neither the consumer (${NB}) nor where ${NB}.app2 binds ${PROVIDER} (${NB})` });
});

test('the bare subject is refused without --lab, with its reason; a reply that is not an inbox is ignored', async () => {
  assert.equal(await ask(m.admin, VAULT_CREDENTIAL, WEB), { error: UNKNOWN_ASKER });
  const big = await ask(m.admin, `${VAULT_CREDENTIAL}.${NA}`, 'x'.repeat(5000));
  assert.match(big.error ?? '', /^bad request: /);
  const got: string[] = [];
  const sub = m.admin.subscribe('not.an.inbox', { callback: (_e, msg) => void got.push(msg.string()) });
  m.admin.publish(`${VAULT_CREDENTIAL}.${NA}`, jsonBytes({ name: WEB }), { reply: 'not.an.inbox' });
  // Answered in order: once a later ask is answered, the one before it was seen.
  assert.ok((await ask(m.admin, `${VAULT_CREDENTIAL}.${NA}`, WEB)).value);
  await m.admin.flush();
  sub.unsubscribe();
  assert.equal(got, []);
  assert.match(vault.stderr(), /ignored a request on mesh-vault\.credential\.na with reply subject "not\.an\.inbox"/);
});

test('with --lab the bare subject is answered, said at start as a warning', async () => {
  const lab = await startVault(['--lab']);
  try {
    assert.match(lab.stderr(), /--lab: the bare mesh-vault\.credential is answered without knowing the asker/);
    // Both vaults hear the bare subject: the lab one answers, the other refuses; every reply is gathered.
    const replies: unknown[] = [];
    const inbox = `_INBOX_admin.lab-${Date.now()}`;
    const sub = m.admin.subscribe(inbox, { callback: (_e, msg) => void replies.push(msg.json()) });
    m.admin.publish(VAULT_CREDENTIAL, jsonBytes({ name: WEB }), { reply: inbox });
    await waitFor('both replies', () => replies.length === 2);
    sub.unsubscribe();
    const value = readFileSync(join(store, ...WEB.split('/')), 'utf8');
    assert.equal(new Set(replies.map((r) => JSON.stringify(r))), new Set([JSON.stringify({ value }), JSON.stringify({ error: UNKNOWN_ASKER })]));
  } finally {
    lab.child.kill('SIGTERM');
    assert.equal(await lab.exited, { code: 0, signal: null });
    said.push(lab.stderr());
  }
});

test('`rotate` as the vault login writes a new value and the provider’s consumers file follows; a module secret comes from stdin', async () => {
  const before = consumers().find((c) => c.module === 'web')!.credential;
  const rotated = await runBundle('node', dir, 'vault', ['rotate', WEB, ...vaultArgs()]);
  said.push(rotated.stdout, rotated.stderr);
  assert.is(rotated.code, 0, rotated.stderr);
  assert.match(rotated.stdout, /^rotated pair\/pg\/database\/nb\/web; said on mesh-vault\.changed\n$/);
  const now = readFileSync(join(store, ...WEB.split('/')), 'utf8');
  assert.is.not(now, before);
  await waitFor('the consumers file after rotate', () => consumers().find((c) => c.module === 'web')?.credential === now, 15_000);
  assert.is(consumers().find((c) => c.module === 'api')?.credential, readFileSync(join(store, ...API.split('/')), 'utf8'), 'api untouched');

  // A provision's credential the store does not hold (a mistyped name), or a store that is not there (not the running vault's): refused, nothing written or made.
  const typo = `pair/${PROVIDER}/databse/${NB}/web`;
  const mistyped = await runBundle('node', dir, 'vault', ['rotate', typo, ...vaultArgs()]);
  assert.is(mistyped.code, 1, mistyped.stderr);
  assert.match(
    mistyped.stderr,
    new RegExp(
      `^mesh-vault: ${typo} is not in the store \\S+: a provision's credential is made at its first ask, so this name is mistyped or the store is not the running vault's; nothing rotated\\n$`,
    ),
  );
  assert.not.ok(existsSync(join(store, 'pair', PROVIDER, 'databse')), 'nothing written under the mistyped name');
  const elsewhere = join(store, '..', 'not-the-store');
  const wrongStore = await runBundle('node', dir, 'vault', ['rotate', WEB, '--nats', m.nats.url, '--nkey', m.nkey(USERS.vault), '--store', elsewhere]);
  assert.is(wrongStore.code, 1, wrongStore.stderr);
  assert.match(wrongStore.stderr, /no vault store there: rotate writes to the store the running vault uses/);
  assert.not.ok(existsSync(elsewhere), 'no store made');

  const empty = await runBundle('node', dir, 'vault', ['rotate', 'module/web/api-key', ...vaultArgs()]);
  assert.is(empty.code, 1);
  assert.match(empty.stderr, /give its new value on stdin/);
  const nb = await m.connect(USERS.client(NB));
  await runStdin(['rotate', 'module/web/api-key', ...vaultArgs()], 'module-secret-value\n');
  assert.equal(await ask(nb, VAULT_CREDENTIAL, 'module/web/api-key'), { value: 'module-secret-value' });
  assert.equal(m.violations(), [], 'nothing rotate did was refused');
});

test('`rotate` run as root into a store another user owns (the vault unit’s) writes files and directories that user owns and can read (issue 31 item 17)', async () => {
  if (process.getuid?.() !== 0) return void console.log('  (skipped: not root)');
  const owner = 23456;
  const theirs = tempDir('mesh-vault-theirs-');
  try {
    chownSync(theirs, owner, owner);
    await runStdin(['rotate', 'module/web/api-key', '--nats', m.nats.url, '--nkey', m.nkey(USERS.vault), '--store', theirs], 'root-rotated\n');
    for (const at of [join(theirs, 'module'), join(theirs, 'module', 'web'), join(theirs, 'module', 'web', 'api-key')]) {
      const st = statSync(at);
      assert.equal([st.uid, st.gid], [owner, owner], `${at} is the store owner's`);
    }
    // What the vault's unit does, as its own user: read the secret.
    const read = spawnSync(
      process.execPath,
      ['-e', `process.stdout.write(require('fs').readFileSync(${JSON.stringify(join(theirs, 'module', 'web', 'api-key'))}, 'utf8'))`],
      {
        uid: owner,
        gid: owner,
        encoding: 'utf8',
      },
    );
    assert.is(read.stdout, 'root-rotated', read.stderr);
  } finally {
    rmSync(theirs, { recursive: true, force: true });
  }
});

test('SIGTERM drains and exits 0; no value the vault holds is in any line it or `rotate` logged, at every level', async () => {
  vault.child.kill('SIGTERM');
  assert.equal(await vault.exited, { code: 0, signal: null });
  said.push(vault.stderr(), vault.stdout());
  assert.match(vault.stderr(), /handed pair\/pg\/database\/nb\/web to node na/, 'debug lines were logged');
  const values = files(store).map((f) => readFileSync(f, 'utf8'));
  assert.ok(values.length >= 4);
  const text = said.join('\n');
  for (const value of values) assert.not.ok(text.includes(value), `a value is in the log:\n${text}`);
});

test('past its limit of asks at once the vault answers busy at once, and the client asks again until it is answered', async () => {
  // The bundle has stopped: this vault, on the vault login, is the only one answering.
  const log = memoryLogger();
  let open = () => {};
  const gate = new Promise<void>((resolve) => (open = resolve));
  const source = await VaultStore.open(store);
  const vaultNc = await m.connect(USERS.vault, 'busy vault');
  const served = serveCredentials({
    nc: vaultNc,
    log,
    lab: true,
    maxAsks: 1,
    credentials: async (name) => (await gate, source.credential(name)),
  });
  // Ready as the bundle is before it says so: its subscriptions on the server before anyone asks
  // (else the first ask can find no responder, and the client's take the one slot and wait at the gate).
  await vaultNc.flush();
  const settled: string[] = [];
  const client = new VaultCredentials(m.admin, memoryLogger(), (vault) => void settled.push(vault));
  try {
    const first = ask(m.admin, `${VAULT_CREDENTIAL}.${NA}`, API);
    first.catch(() => {});
    assert.equal(client.get(WEB), { state: 'pending' });
    await waitFor('the busy answer', () => log.lines.some((l) => l.includes(`answering ${BUSY}`)));
    assert.equal(client.get(WEB), { state: 'pending' }, 'busy is no refusal: the client keeps waiting');
    open();
    assert.equal(await first, { value: readFileSync(join(store, ...API.split('/')), 'utf8') });
    await waitFor('the client answered after asking again', () => client.get(WEB).state === 'value', 10_000);
    assert.equal(settled, [WEB]);
  } finally {
    open();
    client.stop();
    await served.stop();
  }
});

/** Runs `vault.js` with `input` on its stdin; resolves once it exited 0. */
async function runStdin(args: string[], input: string): Promise<void> {
  const { spawn } = await import('node:child_process');
  const child = spawn(process.execPath, [join(dir, 'vault.js'), ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d));
  child.stderr.on('data', (d: Buffer) => (out += d));
  child.stdin.end(input);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  said.push(out);
  assert.is(code, 0, out);
}

/** Every regular file under `root`. */
function files(root: string): string[] {
  return readdirSync(root, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath ?? e.path, e.name));
}

test.run();
