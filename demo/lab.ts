// The README's "A lab on one machine" as a program runs it: its ```sh blocks read from a README,
// fed one after the other to one bash — as an operator pastes them into one terminal, so exports
// and background jobs carry from block to block — each block's output kept apart. `npm run demo`
// and test/e2e-operator.test.ts both run the lab through it, so both run what the README says.
import { spawn, type ChildProcess } from 'node:child_process';

/** The heading of the README section whose blocks are the lab. */
export const LAB_HEADING = '### A lab on one machine, from the release';

/** What one block printed and how it ended. */
export type BlockRun = { stdout: string; stderr: string; ms: number };

/** A bash the blocks are fed to, in its own process group. */
export type LabShell = {
  /** Runs one block; rejects (with everything printed so far) when bash exits, -e ending it on a failed command. */
  run(block: string, timeoutMs: number): Promise<BlockRun>;
  /** Everything bash and its jobs printed so far, for a failure. */
  transcript(): string;
  /** SIGTERM to the whole group (bash and every job it started), SIGKILL past `graceMs`; resolves once bash is gone. */
  stop(graceMs?: number): Promise<void>;
  /** The bash process. */
  child: ChildProcess;
};

/** The ```sh blocks of the lab section of `readme`, in order; throws when the section has none. */
export function labBlocks(readme: string): string[] {
  const start = readme.indexOf(`\n${LAB_HEADING}\n`);
  if (start < 0) throw new Error(`the README has no section "${LAB_HEADING}"`);
  const rest = readme.slice(start + LAB_HEADING.length + 2);
  const end = rest.search(/^#{1,3} /m);
  const section = end < 0 ? rest : rest.slice(0, end);
  const blocks = [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
  if (blocks.length === 0) throw new Error(`the README's section "${LAB_HEADING}" has no sh block`);
  return blocks;
}

/** A marker line no block prints, ending each block's output on both streams. */
const MARK = '@@mesh-lab-block-done';

/** Starts `bash -e` in `cwd` with `env` (and nothing else of ours), its own process group, reading blocks from stdin. */
export function startLabShell(cwd: string, env: NodeJS.ProcessEnv): LabShell {
  const child = spawn('bash', ['-e'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  const out = { stdout: '', stderr: '' };
  let all = '';
  let wake: () => void = () => {};
  for (const name of ['stdout', 'stderr'] as const) {
    child[name]!.setEncoding('utf8').on('data', (d: string) => {
      out[name] += d;
      all += d;
      wake();
    });
  }
  const exited = new Promise<string>((resolve) => child.once('close', (code, signal) => resolve(`bash exited (${signal ?? `code ${code}`})`)));

  async function run(block: string, timeoutMs: number): Promise<BlockRun> {
    const started = Date.now();
    const from = { stdout: out.stdout.length, stderr: out.stderr.length };
    const done = (name: 'stdout' | 'stderr') => out[name].indexOf(`${MARK}\n`, from[name]);
    child.stdin!.write(`${block.endsWith('\n') ? block : `${block}\n`}echo ${MARK}; echo ${MARK} >&2\n`);
    const timer = new Promise<string>((resolve) => setTimeout(() => resolve(`the block ran past ${timeoutMs} ms`), timeoutMs).unref());
    for (;;) {
      if (done('stdout') >= 0 && done('stderr') >= 0) break;
      const why = await Promise.race([new Promise<undefined>((r) => (wake = () => r(undefined))), exited, timer]);
      if (why !== undefined && !(done('stdout') >= 0 && done('stderr') >= 0)) {
        throw new Error(`${why} in:\n${block}\nit printed:\n${out.stdout.slice(from.stdout)}${out.stderr.slice(from.stderr)}`);
      }
    }
    const stdout = out.stdout.slice(from.stdout, done('stdout'));
    const stderr = out.stderr.slice(from.stderr, done('stderr'));
    return { stdout, stderr, ms: Date.now() - started };
  }

  async function stop(graceMs = 10_000): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return killGroup(child, 'SIGKILL');
    killGroup(child, 'SIGTERM');
    const kill = setTimeout(() => killGroup(child, 'SIGKILL'), graceMs);
    await exited;
    clearTimeout(kill);
  }

  return { run, transcript: () => all, stop, child };
}

/** Sends `signal` to the child's process group, ignoring a group already gone. */
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // Already gone.
  }
}
