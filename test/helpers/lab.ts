// The README's lab run from a release tarball (demo/lab.ts feeds its blocks to one bash), and what an
// operator does to it afterwards: each program the lab started, found as /proc shows it (its argv,
// working directory, environment and the file its stderr goes to), stopped and started again as it
// was — from another release's bundles (an upgrade) or with another bus in its environment (a
// restore). Only the lab shell's own process group is looked at.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { basename, delimiter, dirname, join } from 'node:path';
import type { Postgres } from './postgres.ts';
import { envWithoutMesh, stopProcess } from './spawn.ts';
import { ensureBuilt, ROOT } from './bundle.ts';
import { waitFor } from './wait.ts';
import * as assert from 'uvu/assert';

/** The package's version: the release's tarball is `mesh-provisioner-<version>.tar.gz`, unpacked into a directory of that name. */
export const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
/** The directory a release tarball unpacks into. */
export const RELEASE_TOP = `mesh-provisioner-${VERSION}`;

/** Packs this checkout's release into `out` from dist/ as built (no rebuild: other suites run those bundles); returns the tarball's path. */
export function packRelease(out: string): string {
  for (const b of ['server', 'client', 'engine', 'vault', 'sdk', 'provider', 'postgres-provider']) ensureBuilt(b);
  const made = spawnSync(process.execPath, [join(ROOT, 'scripts', 'release.mjs'), '--out', out, '--no-build'], { cwd: ROOT, encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`scripts/release.mjs --no-build exited ${made.status}: ${made.stderr}`);
  return join(out, `${RELEASE_TOP}.tar.gz`);
}

/** The environment the lab's blocks run with: this node first on PATH, HOME in `work`, the bus's port and the PostgreSQL the provider administers. */
export function labEnv(work: string, port: number, db: Postgres): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...envWithoutMesh(),
    PATH: [dirname(process.execPath), process.env['PATH'] ?? ''].join(delimiter),
    HOME: work,
    PORT: String(port),
    PGHOST: db.host,
    PGPORT: String(db.port),
    PGUSER: db.adminUser,
    PGPASSWORD: db.adminPassword,
  };
  for (const key of Object.keys(env)) if (key.startsWith('NODE_')) delete env[key];
  return env;
}

/** A program the lab started, as /proc shows it. */
export type LabProgram = {
  pid: number;
  /** Its command line: `node server.js --nkey …`, `nats-server -c …`. */
  argv: string[];
  /** `server.js`, `client.js`, … or `nats-server`. */
  program: string;
  /** The value of `flag` on its command line, if given. */
  flag(flag: string): string | undefined;
  cwd: string;
  env: Record<string, string>;
  /** The file its stderr is written to. */
  stderrFile: string;
};

/** Every program running in the process group of the lab shell `shellPid` (the shell itself left out). */
export function labPrograms(shellPid: number): LabProgram[] {
  const found: LabProgram[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === shellPid) continue;
    const pid = Number(entry);
    try {
      // stat: "pid (comm) state ppid pgrp …"; comm may hold spaces, so the fields are read after its ')'.
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
        .replace(/^.*\) /s, '')
        .split(' ');
      if (Number(fields[2]) !== shellPid || fields[0] === 'Z') continue;
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
        .split('\0')
        .filter((a) => a !== '');
      const env = Object.fromEntries(
        readFileSync(`/proc/${pid}/environ`, 'utf8')
          .split('\0')
          .filter((l) => l.includes('='))
          .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
      );
      const program = basename(argv[0] ?? '') === 'node' ? basename(argv[1] ?? '') : basename(argv[0] ?? '');
      const flag = (name: string) => {
        const at = argv.indexOf(name);
        return at < 0 ? undefined : argv[at + 1];
      };
      found.push({ pid, argv, program, flag, cwd: readlinkSync(`/proc/${pid}/cwd`), env, stderrFile: readlinkSync(`/proc/${pid}/fd/2`) });
    } catch {
      // Gone while it was read (a `sleep` of a block's wait, say).
    }
  }
  return found;
}

/** The one program of the lab that `match` picks; throws naming what it looked for when there is not exactly one. */
export function labProgram(shellPid: number, what: string, match: (p: LabProgram) => boolean): LabProgram {
  const all = labPrograms(shellPid);
  const picked = all.filter(match);
  if (picked.length !== 1) throw new Error(`${picked.length} programs of the lab are ${what}; running: ${all.map((p) => p.argv.join(' ')).join('; ')}`);
  return picked[0]!;
}

/** Whether `pid` is gone (or a zombie its shell has not reaped yet). */
function gone(pid: number): boolean {
  try {
    return /^\S+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

/** Programs this helper started, stopped by stopRestarted. */
const restarted = new Set<ChildProcess>();

/**
 * Stops `p` (SIGTERM, as systemd's stop does; its drain awaited) and starts it again with the same
 * command line — from `dir` (another release's directory: its bundle of the same name) and with
 * `env` over its environment — its stderr appended to the same file. Resolves with the new process.
 */
export async function restartProgram(p: LabProgram, change: { dir?: string; env?: Record<string, string> } = {}): Promise<ChildProcess> {
  process.kill(p.pid, 'SIGTERM');
  await waitFor(`${p.program} (pid ${p.pid}) to exit`, () => gone(p.pid), 15_000);
  const cwd = change.dir ?? p.cwd;
  if (p.argv[0] !== 'nats-server' && !existsSync(join(cwd, p.argv[1] ?? ''))) throw new Error(`${cwd} has no ${p.argv[1]}`);
  const stderr = openSync(p.stderrFile, 'a');
  try {
    const child = spawn(p.argv[0]!, p.argv.slice(1), { cwd, env: { ...p.env, ...change.env }, stdio: ['ignore', 'ignore', stderr] });
    restarted.add(child);
    child.once('exit', () => restarted.delete(child));
    return child;
  } finally {
    closeSync(stderr);
  }
}

/** Stops every program restartProgram started (SIGTERM, then SIGKILL past the grace); resolves with each one's exit code. */
export async function stopRestarted(): Promise<(number | null)[]> {
  const children = [...restarted];
  const codes = children.map(
    (c) => new Promise<number | null>((resolve) => (c.exitCode !== null ? resolve(c.exitCode) : c.once('exit', (code) => resolve(code)))),
  );
  await Promise.all(children.map((c) => stopProcess(c, 10_000)));
  return Promise.all(codes);
}

/** The lines of a file (none when it is not there). */
export function linesOf(path: string): string[] {
  return existsSync(path)
    ? readFileSync(path, 'utf8')
        .split('\n')
        .filter((l) => l !== '')
    : [];
}

/** The fills an engine's log (`engine.log`) says from line `from` on: module → what its files became (`2 unchanged`), the last said. */
export function fillsSaid(engineLog: string, from: number): Map<string, string> {
  const fills = new Map<string, string>();
  for (const line of linesOf(engineLog).slice(from)) {
    const m = / fill (\S+) \S+: (.*)$/.exec(line);
    if (m) fills.set(m[1]!, m[2]!);
  }
  return fills;
}

/** Each engine's journal in the lab at `lab`, as lines. */
export function labJournal(lab: string, node: string): string[] {
  return linesOf(join(lab, node, 'journal.log'));
}

/**
 * A config change made by `set` (a `server.js config set n1 web workers 9` the caller runs) reaches
 * n1's web.conf and restarts web once: the only journal line either engine gains since `journals`.
 */
export async function assertOneRestartAfterChange(lab: string, journals: { n1: string[]; n2: string[] }, set: () => Promise<unknown>): Promise<void> {
  await set();
  await waitFor(
    'worker_processes 9 in n1’s web.conf',
    () => readFileSync(join(lab, 'n1', 'etc', 'web', 'web.conf'), 'utf8').includes('worker_processes 9;'),
    15_000,
  );
  await waitFor('web restarted on n1', () => labJournal(lab, 'n1').length > journals.n1.length, 10_000);
  assert.equal(
    labJournal(lab, 'n1')
      .slice(journals.n1.length)
      .map((l) => l.replace(/^\S+ /, '')),
    ['restart web'],
  );
  assert.equal(labJournal(lab, 'n2'), journals.n2, 'n2’s engine restarted nothing');
}
