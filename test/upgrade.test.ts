// An upgrade as deploy/README.md says (issue 31 item 20): the README's lab, run from the previous
// release's tarball — the tree of PREVIOUS, taken from git and packed by its own scripts/release.mjs —
// is upgraded to this checkout's tarball while it serves, one kind of program after another in the
// order of deploy/README.md's "Upgrading": the bus configuration and init, the seat, the vault, each
// node's client then its engine, the provider. Each program is stopped and started again on the new
// bundle as it was started (argv, environment, log). No module restarts (each engine's journal gains
// nothing, and every fill after a restart is answered unchanged), `status` exits 0 after each step,
// and a config change made after the upgrade reaches its file. Where PREVIOUS is not in the
// repository (a shallow clone), the test is skipped and counted so.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { labBlocks, startLabShell, type LabShell } from '../demo/lab.ts';
import { ROOT } from './helpers/bundle.ts';
import {
  assertOneRestartAfterChange,
  fillsSaid,
  labEnv,
  labProgram,
  labPrograms,
  linesOf,
  packRelease,
  RELEASE_TOP,
  restartProgram,
  stopRestarted,
  type LabProgram,
} from './helpers/lab.ts';
import { freePort } from './helpers/nats.ts';
import { startPostgres, type Postgres } from './helpers/postgres.ts';
import { waitFor } from './helpers/wait.ts';
import { tempDir } from './helpers/temp.ts';

/** The previous release: the last commit landed before this round's work (`git log`: the one before "docs/design.md: the contract as it changed"). */
const PREVIOUS = '4efd8e1';
const BLOCK_MS = 90_000;
/** Each node's modules in the lab, as its engine is sent them. */
const MODULES = { n1: ['web', 'postgres', 'app'], n2: ['web'] } as const;

let work = '';
let db: Postgres | undefined;
let shell: LabShell | undefined;

/** Whether PREVIOUS is a commit of this repository (not in a shallow clone that lacks it). */
function previousReachable(): boolean {
  return spawnSync('git', ['-C', ROOT, 'cat-file', '-e', `${PREVIOUS}^{commit}`]).status === 0;
}

/** Packs the previous release into `out`: its tree from git, node_modules linked from this checkout (the same package-lock.json), its own release script. */
function packPrevious(out: string): void {
  const tree = join(work, 'previous-tree');
  mkdirSync(tree);
  const tar = spawnSync('git', ['-C', ROOT, 'archive', '--format=tar', PREVIOUS], { maxBuffer: 512 * 1024 * 1024 });
  assert.is(tar.status, 0, `git archive ${PREVIOUS}: ${tar.stderr}`);
  assert.is(spawnSync('tar', ['-x', '-C', tree], { input: tar.stdout }).status, 0, 'tar -x of the previous tree');
  const differs = lockedElsewise(tree);
  if (differs.length > 0) {
    throw new Error(
      `${PREVIOUS}'s package-lock.json locks ${differs.join(', ')} at another version than this checkout's: its tree needs node_modules of its own (npm ci there, from the registry) before it can be built`,
    );
  }
  symlinkSync(join(ROOT, 'node_modules'), join(tree, 'node_modules'), 'dir');
  const made = spawnSync(process.execPath, [join(tree, 'scripts', 'release.mjs'), '--out', out], { cwd: tree, encoding: 'utf8' });
  assert.is(made.status, 0, `the previous release.mjs: ${made.stderr}`);
}

type Lock = { packages: Record<string, { version?: string }> };

/**
 * The packages `tree`'s package-lock.json locks at a version this checkout's node_modules does not
 * hold (the root package aside: its own version moves with each release). This checkout may hold
 * more packages: the previous tree's build never loads them.
 */
function lockedElsewise(tree: string): string[] {
  const lock = (dir: string) => JSON.parse(readFileSync(join(dir, 'package-lock.json'), 'utf8')) as Lock;
  const [before, now] = [lock(tree), lock(ROOT)];
  return Object.entries(before.packages)
    .filter(([path, p]) => path !== '' && now.packages[path]?.version !== p.version)
    .map(([path, p]) => `${path.replace(/^node_modules\//, '')}@${p.version}`);
}

/** The release's top directory in its tarball: mesh-provisioner-<version> of the tree's package.json. */
function releaseTop(tree: string): string {
  return `mesh-provisioner-${(JSON.parse(readFileSync(join(tree, 'package.json'), 'utf8')) as { version: string }).version}`;
}

/** The steps of deploy/README.md's "Upgrading", each by the words in bold that open it. */
function documentedSteps(): string[] {
  const readme = readFileSync(join(ROOT, 'deploy', 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('\n## Upgrading\n'), readme.indexOf('\n## Backup and restore\n'));
  return [...section.matchAll(/^\d+\. \*\*(.+?)\*\*/gm)].map((m) => m[1]!);
}

if (!previousReachable()) {
  console.log(`# skipped: the previous release's commit ${PREVIOUS} is not in this repository (a shallow clone?): git fetch --unshallow`);
  test.skip('the lab of the previous release, upgraded to this one');
} else {
  test.before(async () => {
    work = tempDir('mesh-upgrade-');
    mkdirSync(join(work, 'previous'));
    mkdirSync(join(work, 'new'));
    packPrevious(join(work, 'previous'));
    const tarball = packRelease(join(work, 'new'));
    assert.is(spawnSync('tar', ['xzf', tarball, '-C', join(work, 'new')]).status, 0);
    db = await startPostgres();
  });
  test.after(async () => {
    await stopRestarted();
    await shell?.stop();
    await db?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  test('the lab of the previous release, upgraded program by program to this one, restarts no module', async () => {
    assert.equal(documentedSteps(), [
      'The bus configuration.',
      '`server.js`, the seat',
      '`vault.js`, the vault',
      '`client.js` and `engine.js` on each node',
      '`postgres-provider.js`, each provider',
    ]);
    const port = await freePort();
    const old = join(work, 'previous');
    const NEW = join(work, 'new', RELEASE_TOP);
    shell = startLabShell(old, { ...labEnv(work, port, db!), NEW });
    const lab = join(old, releaseTop(join(work, 'previous-tree')), 'lab');
    const run = (block: string) => shell!.run(block, BLOCK_MS);
    const previousBlocks = labBlocks(readFileSync(join(work, 'previous-tree', 'README.md'), 'utf8'));
    for (const block of previousBlocks.slice(0, 7)) await run(block);
    const journal = (node: string) => linesOf(join(lab, node, 'journal.log'));
    await waitFor('the rotation’s restart of app', () => journal('n1').filter((l) => l.endsWith(' restart app')).length >= 2, 30_000);
    const statusZero = (server: string, node = '') => run(`timeout 30 sh -c 'until node ${server} status ${node} >/dev/null; do sleep 1; done'`);
    await statusZero('server.js');
    const journals = { n1: journal('n1'), n2: journal('n2') };
    const pid = shell.child.pid!;
    const only = (what: string, match: (p: LabProgram) => boolean) => labProgram(pid, what, match);
    const linesIn = (file: string) => linesOf(join(lab, file)).length;
    const newLine = (file: string, from: number, pattern: RegExp) =>
      waitFor(
        `${file}: ${pattern}`,
        () =>
          linesOf(join(lab, file))
            .slice(from)
            .some((l) => pattern.test(l)),
        30_000,
      );
    /**
     * Waits until the node's engine has been sent each of its modules since line `from` of its log, and
     * says each fill unchanged; a module of `rewritten` has its files written, by design of this release.
     */
    const refilledUnchanged = async (node: keyof typeof MODULES, from: number, after: string, rewritten: readonly string[] = []) => {
      const fills = await waitFor(
        `${node}'s engine sent ${MODULES[node].join(', ')} again after ${after}`,
        () => {
          const said = fillsSaid(join(lab, node, 'engine.log'), from);
          return MODULES[node].every((m) => said.has(m)) ? said : undefined;
        },
        30_000,
      );
      for (const m of MODULES[node])
        assert.match(fills.get(m)!, rewritten.includes(m) ? /^\d+ written$/ : /^\d+ unchanged$/, `${node}.${m} after ${after}: ${fills.get(m)}`);
    };

    // 1. The bus configuration, rendered by the new release as the previous one was; reloaded only if it differs; then init.
    const busConfig = /^node server\.js bus-config (.+) --out \$LAB\/nats\.conf$/m.exec(previousBlocks[0]!.replace(/ \\\n\s*/g, ' '));
    const init = /^node server\.js init (.+)$/m.exec(previousBlocks[0]!);
    assert.ok(busConfig && init, `the previous lab's first block runs bus-config and init:\n${previousBlocks[0]}`);
    await run(`node $NEW/server.js bus-config ${busConfig[1]} --out $LAB/nats.conf.new`);
    if (readFileSync(join(lab, 'nats.conf.new'), 'utf8') !== readFileSync(join(lab, 'nats.conf'), 'utf8')) {
      const reloads = linesOf(join(lab, 'nats.log')).filter((l) => l.includes('Reloaded server configuration')).length;
      renameSync(join(lab, 'nats.conf.new'), join(lab, 'nats.conf'));
      process.kill(only('nats-server', (p) => p.program === 'nats-server').pid, 'SIGHUP');
      await waitFor('nats-server reloaded', () => linesOf(join(lab, 'nats.log')).filter((l) => l.includes('Reloaded server configuration')).length > reloads);
    }
    // init exits 1 when a bucket differs from what it would make (and the shell's -e ends the test).
    await run(`node $NEW/server.js init ${init[1]}`);
    await statusZero('server.js');

    // 2. The seat; from here on the operator's commands are the new release's.
    const seatFrom = linesIn('seat.log');
    await restartProgram(
      only('the seat', (p) => p.program === 'server.js'),
      { dir: NEW },
    );
    await newLine('seat.log', seatFrom, /seat ready/);
    await statusZero('$NEW/server.js');

    // 3. The vault.
    const vaultFrom = linesIn('vault.log');
    await restartProgram(
      only('the vault', (p) => p.program === 'vault.js'),
      { dir: NEW },
    );
    await newLine('vault.log', vaultFrom, /vault ready/);
    await statusZero('$NEW/server.js');

    // 4. Each node: its client, then its engine; every fill after either answered unchanged.
    for (const node of ['n1', 'n2'] as const) {
      const engineLog = () => linesIn(join(node, 'engine.log'));
      let from = engineLog();
      const clientFrom = linesIn(join(node, 'client.log'));
      await restartProgram(
        only(`${node}'s client`, (p) => p.program === 'client.js' && p.flag('--node') === node),
        { dir: NEW },
      );
      await newLine(join(node, 'client.log'), clientFrom, /client ready/);
      // The provider's consumers file gains each consumer's provision entry (issue 31 item 1): written once, its change `none`.
      await refilledUnchanged(node, from, `its client's upgrade`, node === 'n1' ? ['postgres'] : []);
      from = engineLog();
      await restartProgram(
        only(`${node}'s engine`, (p) => p.program === 'engine.js' && (p.flag('--socket') ?? '').endsWith(`/${node}/fill.sock`)),
        { dir: NEW },
      );
      await refilledUnchanged(node, from, `its engine's upgrade`);
      await statusZero('$NEW/server.js', node);
    }

    // 5. The provider, last.
    const providerFrom = linesIn('provider.log');
    await restartProgram(
      only('the provider', (p) => p.program === 'postgres-provider.js'),
      { dir: NEW },
    );
    await newLine('provider.log', providerFrom, /bus: connected to/);
    await statusZero('$NEW/server.js');
    assert.equal(
      labPrograms(pid).map((p) => p.program),
      ['nats-server'],
      'every program of the previous release but nats-server was replaced',
    );
    const rollout = await run('node $NEW/server.js rollout web');
    assert.match(rollout.stdout, /^web {2}done {2}build 2 from 1/m, rollout.stdout);

    // A change after the upgrade reaches its file and restarts web once: the only restart since the upgrade began.
    await assertOneRestartAfterChange(lab, journals, () => run('node $NEW/server.js config set n1 web workers 9'));
    for (const code of await stopRestarted()) assert.is(code, 0, 'each upgraded program stops with 0');
  });
}

test.run();
