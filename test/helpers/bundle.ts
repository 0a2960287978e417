// Builds the bundles when stale, copies one alone into an empty dir, and runs it under node or deno.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, parse } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from './temp.ts';

/** The repository root. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The deno binary of the dev dependency. */
export const DENO = join(ROOT, 'node_modules', '.bin', 'deno');

/** The runtimes a bundle is run under (DESIGN §1, §10): `node-no-detect` is this node as Node 20.0–20.18 run a `.js` with no package.json (no module-type detection). */
export type Runtime = 'node' | 'node-no-detect' | 'deno';

/** Every runtime a shipped bundle must run under. */
export const RUNTIMES: readonly Runtime[] = ['node', 'node-no-detect', 'deno'];

/** The command and the arguments before the script that run a bundle under `runtime`. */
export function runtimeCommand(runtime: Runtime): [string, string[]] {
  if (runtime === 'deno') return [DENO, ['run', '-A']];
  return [process.execPath, runtime === 'node-no-detect' ? ['--no-experimental-detect-module'] : []];
}

/** A bundle running as a child process. */
export type Running = {
  child: ChildProcess;
  /** Everything written to stdout so far. */
  stdout(): string;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Resolves with the exit code (null when killed by a signal) and the signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves once stderr holds a line matching `pattern`; rejects with stderr after `ms` or on exit. */
  waitForLog(pattern: RegExp, ms?: number): Promise<string>;
  /** Kills the child (SIGKILL) unless it has exited. */
  kill(): void;
};

/** What a bundle run to its end printed. */
export type Finished = { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; ms: number };

const children = new Set<ChildProcess>();
const dirs: string[] = [];
let denoDir: string | undefined;

function newestMtime(path: string): number {
  const st = statSync(path);
  if (!st.isDirectory()) return st.mtimeMs;
  return Math.max(st.mtimeMs, ...readdirSync(path).map((name) => newestMtime(join(path, name))));
}

/** The file a bundle is built to: a program's `<name>.js`, the SDK and the provider helper (imported, not run) `<name>.mjs`. */
export function bundleFile(name: string): string {
  return name === 'sdk' || name === 'provider' ? `${name}.mjs` : `${name}.js`;
}

/** Runs `node build.mjs` when `dist/<name>.js` is missing or older than src/, examples/ (the provider's bundle), package.json or build.mjs. */
export function ensureBuilt(name: string): void {
  const out = join(ROOT, 'dist', bundleFile(name));
  const inputs = Math.max(...['src', 'examples', 'package.json', 'build.mjs'].map((input) => newestMtime(join(ROOT, input))));
  if (existsSync(out) && statSync(out).mtimeMs >= inputs) return;
  const run = spawnSync(process.execPath, ['build.mjs'], { cwd: ROOT, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`node build.mjs failed (${run.status}): ${run.stderr}`);
}

/** Whether `dir` or any directory above it holds a node_modules. */
export function hasNodeModulesAbove(dir: string): boolean {
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, 'node_modules'))) return true;
    if (at === parse(at).root) return false;
  }
}

/** Copies `dist/<name>.js`, and nothing else, into a fresh dir under the OS temp dir. */
export function copyBundleAlone(name: string): string {
  const dir = tempDir(`mesh-bundle-${name}-`);
  dirs.push(dir);
  copyFileSync(join(ROOT, 'dist', bundleFile(name)), join(dir, bundleFile(name)));
  return dir;
}

/** The parent's environment without anything that would steer a bundle (MESH_*, systemd's markers), plus `extra`. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('MESH_') || k === 'JOURNAL_STREAM' || k === 'INVOCATION_ID' || k === 'NOTIFY_SOCKET' || k.startsWith('NODE_')) continue;
    env[k] = v;
  }
  if (denoDir === undefined) {
    denoDir = tempDir('mesh-deno-');
    dirs.push(denoDir);
  }
  return { ...env, DENO_DIR: denoDir, NO_COLOR: '1', ...extra };
}

/** Starts `<dir>/<name>.js` under `runtime` with cwd `dir`. */
export function startBundle(runtime: Runtime, dir: string, name: string, args: string[], env: Record<string, string> = {}): Running {
  const [cmd, pre] = runtimeCommand(runtime);
  const child = spawn(cmd, [...pre, `${name}.js`, ...args], { cwd: dir, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('error', (e) => {
      err += String(e);
      resolve({ code: null, signal: null });
    });
    child.once('close', (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    });
  });
  let done = false;
  void exited.then(() => (done = true));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    async waitForLog(pattern, ms = 10_000) {
      const until = Date.now() + ms;
      for (;;) {
        const line = err.split('\n').find((l) => pattern.test(l));
        if (line !== undefined) return line;
        if (done || Date.now() > until) {
          throw new Error(`${done ? 'exited' : `no line within ${ms} ms`} matching ${pattern}; stderr:\n${err}`);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    kill() {
      if (!done) child.kill('SIGKILL');
    },
  };
}

/** Runs a bundle to its end; kills it and says so when it takes longer than `ms`. */
export async function runBundle(runtime: Runtime, dir: string, name: string, args: string[], env: Record<string, string> = {}, ms = 10_000): Promise<Finished> {
  const started = Date.now();
  const running = startBundle(runtime, dir, name, args, env);
  const timer = setTimeout(() => running.kill(), ms);
  const { code, signal } = await running.exited;
  clearTimeout(timer);
  return { code, signal, stdout: running.stdout(), stderr: running.stderr(), ms: Date.now() - started };
}

/** Kills every child still running and removes the dirs this helper made. */
export function cleanupBundles(): void {
  for (const child of children) child.kill('SIGKILL');
  children.clear();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  denoDir = undefined;
}

// A suite that dies on an uncaught error still takes its children with it.
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
