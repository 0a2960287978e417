// Each suite's own temp dir: test/run.mjs runs a suite with TMPDIR set to a fresh dir, and when the
// suite has ended looks in it and at the processes still carrying it. A run must leave nothing
// behind: what a suite left there is a failure of that suite, named, then removed (and its
// processes killed), so neither /tmp nor the process table fills over many runs.
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The temp dir the runner itself was given: each suite's dir is made in it. */
const OUTER = tmpdir();

/** How long processes the suite killed as it ended may take to be gone before they count as left. */
const GONE_WITHIN_MS = 2000;

/** The suites' dirs not yet removed: removed when the runner exits, however it exits. */
const live = new Set();

process.once('exit', () => {
  for (const dir of live) rmSync(dir, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(128 + (signal === 'SIGINT' ? 2 : 15)));

/**
 * A fresh dir for one suite, mode 1777 with the sticky bit as /tmp is: a test runs programs as
 * another user (PostgreSQL as nobody, the engine as its owner) in dirs it makes here, and they must
 * reach them as they would under /tmp. The name is short: a suite's unix sockets live below it, and
 * a socket path holds at most 107 bytes.
 */
export function makeSuiteTemp() {
  const dir = mkdtempSync(join(OUTER, 'mesh-suite-'));
  chmodSync(dir, 0o1777);
  live.add(dir);
  return dir;
}

/**
 * What the suite left behind in `dir` once it ended — the names in it, and the processes still
 * carrying TMPDIR=`dir` (its children inherit it) — as one line, or undefined when nothing. The
 * processes are killed and the dir removed either way.
 */
export async function leftBehind(dir) {
  let processes = carrying(dir);
  for (const until = Date.now() + GONE_WITHIN_MS; processes.length > 0 && Date.now() < until; processes = carrying(dir)) {
    await new Promise((r) => setTimeout(r, 50));
  }
  for (const { pid } of processes) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone between the look and the kill.
    }
  }
  // tsx's transform cache (`tsx-<uid>`), made there by a child the suite runs under tsx (the demo's
  // scripts): a cache, not something the suite's code left; removed with the dir all the same.
  const names = readdirSync(dir)
    .filter((name) => !/^tsx-\d+$/.test(name))
    .sort();
  rmSync(dir, { recursive: true, force: true });
  live.delete(dir);
  const said = [];
  if (names.length > 0) said.push(`left in its temp dir: ${names.join(', ')}`);
  if (processes.length > 0) said.push(`left running (killed): ${processes.map((p) => `${p.pid} ${p.command}`).join(', ')}`);
  return said.length > 0 ? said.join('; ') : undefined;
}

/** The processes whose environment holds TMPDIR=`dir` (the suite's children: its own process sets it after start), with their command line; none where there is no /proc. */
function carrying(dir) {
  const marker = `\0TMPDIR=${dir}\0`;
  let pids;
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return [];
  }
  const found = [];
  for (const pid of pids) {
    try {
      if (!`\0${readFileSync(`/proc/${pid}/environ`, 'latin1')}`.includes(marker)) continue;
      const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ').slice(0, 120);
      found.push({ pid: Number(pid), command });
    } catch {
      // Gone, or another user's: not this suite's to judge.
    }
  }
  return found;
}
