// The systemd units of deploy/systemd: each passes `systemd-analyze verify`, is exposed no more than
// deploy/README.md records, sets only variables its program reads, and names groups the sysusers file
// makes. systemd need not be running: verify and `security --offline=true` read the unit files alone.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureBuilt, ROOT } from './helpers/bundle.ts';
import { tempDir } from './helpers/temp.ts';

const SYSTEMD_DIR = join(ROOT, 'deploy', 'systemd');
/** Each unit, the bundle it runs and the example of its EnvironmentFile. */
const UNITS = [
  { unit: 'mesh-provisioner.service', bundle: 'server', env: 'server.env.example' },
  { unit: 'mesh-provisioner-client.service', bundle: 'client', env: 'client.env.example' },
  { unit: 'mesh-engine.service', bundle: 'engine', env: undefined },
  { unit: 'mesh-vault.service', bundle: 'vault', env: 'vault.env.example' },
] as const;
/** How far a unit's exposure may rise above its recorded score before this suite fails. */
const EXPOSURE_SLACK = 0.1;
const dirs: string[] = [];

test.before(() => {
  for (const { bundle } of UNITS) ensureBuilt(bundle);
});
test.after(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function unitText(unit: string): string {
  return readFileSync(join(SYSTEMD_DIR, unit), 'utf8');
}

/** The unit as installed, but with ExecStart on this machine's node and the repository's bundles (verify checks the binary exists). */
function runnableHere(text: string): string {
  return text.replaceAll('/usr/bin/node ', `${process.execPath} `).replaceAll('/opt/mesh-provisioner/', `${join(ROOT, 'dist')}/`);
}

/** Writes `text` as `unit` into a fresh temp dir and runs systemd-analyze with `args` on it. */
function analyze(args: string[], unit: string, text: string): { status: number | null; output: string } {
  const dir = tempDir('mesh-units-');
  dirs.push(dir);
  writeFileSync(join(dir, unit), text);
  const run = spawnSync('systemd-analyze', [...args, join(dir, unit)], { encoding: 'utf8' });
  if (run.error) throw new Error(`systemd-analyze: ${run.error.message} (apt-get install systemd)`);
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

/** Whether systemd-analyze verify accepts the unit: exit 0 and not a word said (an unknown key or a bad value is only a warning). */
function verifyUnit(unit: string, text: string): { ok: boolean; output: string } {
  const { status, output } = analyze(['verify', '--man=no'], unit, text);
  return { ok: status === 0 && output.trim() === '', output: `exit ${status}: ${output.trim()}` };
}

/** The overall exposure systemd-analyze security --offline gives the unit. */
function exposureOf(unit: string, text: string): number {
  const { output } = analyze(['security', '--offline=true', '--no-pager'], unit, text);
  const score = new RegExp(`Overall exposure level for ${unit.replaceAll('.', '\\.')}: (\\d+\\.\\d)`).exec(output)?.[1];
  if (score === undefined) throw new Error(`no exposure for ${unit} in:\n${output}`);
  return Number(score);
}

/** The exposure of each unit as deploy/README.md records it. */
function recordedExposure(): Map<string, number> {
  const text = readFileSync(join(ROOT, 'deploy', 'README.md'), 'utf8');
  return new Map([...text.matchAll(/^\| `([\w-]+\.service)` \| (\d+\.\d) \|/gm)].map((m) => [m[1]!, Number(m[2])]));
}

/** The value of every `key=` line of a unit, in order. */
function settings(text: string, key: string): string[] {
  return [...text.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].map((m) => m[1]!);
}

test('every unit passes systemd-analyze verify, its ExecStart pointed at this machine’s node and the built bundles', () => {
  for (const { unit } of UNITS) {
    const verdict = verifyUnit(unit, runnableHere(unitText(unit)));
    assert.ok(verdict.ok, `${unit}: ${verdict.output}`);
  }
});

test('the verify check refuses a unit with a misspelt key, a bad value or a missing binary', () => {
  const good = runnableHere(unitText('mesh-provisioner-client.service'));
  const broken = {
    'a misspelt key': good.replace('NoNewPrivileges=yes', 'NoNewPrivilege=yes'),
    'a bad value': good.replace('Type=notify', 'Type=notifyy'),
    'a missing binary': good.replace(`ExecStart=${process.execPath} `, 'ExecStart=/usr/bin/no-such-node '),
  };
  for (const [what, text] of Object.entries(broken)) {
    assert.not.equal(text, good, what);
    const verdict = verifyUnit('mesh-provisioner-client.service', text);
    assert.not.ok(verdict.ok, `${what} passed: ${verdict.output}`);
  }
});

test('each unit is exposed no more than deploy/README.md records (+0.1), and less than 2.0', () => {
  const recorded = recordedExposure();
  assert.equal([...recorded.keys()].sort(), UNITS.map((u) => u.unit).sort());
  for (const { unit } of UNITS) {
    const score = exposureOf(unit, unitText(unit));
    console.log(`# exposure ${unit}: ${score} (recorded ${recorded.get(unit)})`);
    assert.ok(score <= recorded.get(unit)! + EXPOSURE_SLACK, `${unit} is exposed ${score}, recorded ${recorded.get(unit)}`);
    assert.ok(recorded.get(unit)! < 2, `${unit}: recorded ${recorded.get(unit)}`);
  }
});

test('the exposure check sees a unit stripped of its hardening', () => {
  const bare = unitText('mesh-provisioner-client.service')
    .split('\n')
    .filter((line) => /^(\[|Description=|Type=|ExecStart=|EnvironmentFile=|WantedBy=)/.test(line))
    .join('\n');
  const score = exposureOf('mesh-provisioner-client.service', bare);
  assert.ok(score > recordedExposure().get('mesh-provisioner-client.service')! + EXPOSURE_SLACK, `stripped: ${score}`);
});

test('each unit has the hardening and the restart policy of the deployment, and the seat and client notify', () => {
  for (const { unit, bundle } of UNITS) {
    const text = unitText(unit);
    const want: Record<string, string> = {
      ExecStart: `/usr/bin/node /opt/mesh-provisioner/${bundle}.js`,
      ProtectSystem: 'strict',
      NoNewPrivileges: 'yes',
      CapabilityBoundingSet: '',
      AmbientCapabilities: '',
      Restart: 'on-failure',
      StartLimitIntervalSec: '300',
      StartLimitBurst: '5',
      SystemCallArchitectures: 'native',
      ...(bundle === 'engine'
        ? { RestrictAddressFamilies: 'AF_UNIX' }
        : { Type: 'notify', NotifyAccess: 'all', UMask: '0077', RestrictAddressFamilies: 'AF_UNIX AF_INET AF_INET6' }),
    };
    for (const [key, value] of Object.entries(want)) assert.equal(settings(text, key), [value], `${unit} ${key}=`);
    assert.equal(settings(text, 'SystemCallFilter')[0], '@system-service', unit);
    assert.match(settings(text, 'MemoryMax')[0] ?? '', /^\d+[MG]$/, `${unit} MemoryMax=`);
    assert.equal(settings(text, 'MemoryDenyWriteExecute'), [], `${unit}: node cannot run under MemoryDenyWriteExecute=yes`);
    assert.equal(settings(text, 'ReadWritePaths'), [], `${unit} writes only its own systemd-made directories`);
  }
  assert.equal(settings(unitText('mesh-provisioner-client.service'), 'CacheDirectory'), ['mesh-provisioner']);
});

test("the daemons' journal lines are named by the program, as its --version names itself, not by node", () => {
  for (const { unit, bundle } of UNITS.filter((u) => u.bundle !== 'engine')) {
    const version = spawnSync(process.execPath, [join(ROOT, 'dist', `${bundle}.js`), '--version'], { encoding: 'utf8' });
    const name = /^(\S+) \S+\n$/.exec(version.stdout)?.[1];
    assert.ok(name, `${bundle} --version: ${version.stdout}`);
    assert.equal(settings(unitText(unit), 'SyslogIdentifier'), [name], `${unit} SyslogIdentifier=`);
  }
});

test('every variable a unit or its example env file sets is one its program reads (its --help names it)', () => {
  for (const { unit, bundle, env } of UNITS) {
    const help = spawnSync(process.execPath, [join(ROOT, 'dist', `${bundle}.js`), '--help'], { encoding: 'utf8' });
    assert.is(help.status, 0, help.stderr);
    const read = new Set([...help.stdout.matchAll(/\[env (MESH_\w+)\]/g)].map((m) => m[1]!));
    const fromUnit = settings(unitText(unit), 'Environment').map((a) => a.split('=')[0]!);
    const fromExample = env ? [...readFileSync(join(SYSTEMD_DIR, env), 'utf8').matchAll(/^#?(MESH_\w+)=/gm)].map((m) => m[1]!) : [];
    assert.ok(fromUnit.length + fromExample.length > 0, unit);
    for (const name of [...fromUnit, ...fromExample])
      assert.ok(read.has(name), `${unit}: ${name} is not a variable of ${bundle}.js (it reads ${[...read].join(', ')})`);
  }
  assert.match(readFileSync(join(SYSTEMD_DIR, 'client.env.example'), 'utf8'), /^MESH_NODE=\S+$/m);
});

test('the sysusers file makes the groups and users the units name, and systemd-sysusers refuses a broken one', () => {
  const root = tempDir('mesh-sysusers-');
  dirs.push(root);
  mkdirSync(join(root, 'etc'));
  const sysusers = (input: string) => spawnSync('systemd-sysusers', [`--root=${root}`, '-'], { input, encoding: 'utf8' });
  const made = sysusers(readFileSync(join(SYSTEMD_DIR, 'mesh-provisioner.sysusers'), 'utf8'));
  assert.is(made.status, 0, made.stderr);
  const groups = readFileSync(join(root, 'etc', 'group'), 'utf8')
    .split('\n')
    .map((l) => l.split(':')[0]);
  const users = readFileSync(join(root, 'etc', 'passwd'), 'utf8')
    .split('\n')
    .map((l) => l.split(':')[0]);
  for (const { unit } of UNITS) {
    const text = unitText(unit);
    for (const group of [...settings(text, 'Group'), ...settings(text, 'SupplementaryGroups')]) assert.ok(groups.includes(group), `${unit}: group ${group}`);
    // A dynamic user is made at start; a static one must be in the file.
    if (settings(text, 'DynamicUser')[0] !== 'yes') for (const user of settings(text, 'User')) assert.ok(users.includes(user), `${unit}: user ${user}`);
  }
  assert.is.not(sysusers('x mesh-fill\n').status, 0);
});

test('node aborts under the seccomp rules of MemoryDenyWriteExecute=yes, which is why no unit sets it; --jitless runs', () => {
  const mdwe = join(ROOT, 'test', 'helpers', 'mdwe.py');
  const withJit = spawnSync('python3', [mdwe, process.execPath, '-e', 'console.log("ran")'], { encoding: 'utf8' });
  assert.not.equal(withJit.stdout, 'ran\n');
  assert.ok(withJit.status !== 0 || withJit.signal !== null, 'node ran');
  assert.match(withJit.stderr, /Fatal|Check failed/);
  const jitless = spawnSync('python3', [mdwe, process.execPath, '--jitless', '-e', 'console.log("ran")'], { encoding: 'utf8' });
  assert.is(jitless.status, 0, jitless.stderr);
  assert.is(jitless.stdout, 'ran\n');
});

test.run();
