// The bundle-start row of bench/latency.ts: `node dist/client.js` (and deno) spawned → the client's
// first line that needed the bus's answer, beside the bare runtime running an empty script.
import { spawn, spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DENO } from '../test/helpers/bundle.ts';
import { now, ROOT, type BenchMesh } from './lib.ts';

/** `node dist/client.js` (and deno) spawned → its first line that needed the bus's answer. */
export async function measureStart(mesh: BenchMesh): Promise<void> {
  console.log('bundle start: process spawned → first line after the bus answered (median of 7)');
  for (const [name, argv] of [
    ['node', [process.execPath]],
    ['deno', [DENO, 'run', '-A']],
  ] as const) {
    const times: number[] = [];
    for (let i = 0; i < 8; i++) times.push(await firstBusLine([...argv], mesh.url, join(mesh.dir, `start-cache-${i}`)));
    const sorted = times.slice(1).sort((a, b) => a - b); // the first run warms deno's own cache
    console.log(`  ${name.padEnd(6)} p50 ${sorted[3]!.toFixed(0)} ms   (bare \`${name}\` with an empty script: ${(await bareStart([...argv])).toFixed(0)} ms)`);
  }
}

/** Milliseconds from spawning the client to its line saying a bucket's state (the bus answered). */
async function firstBusLine(argv: string[], url: string, cache: string): Promise<number> {
  const started = now();
  const child = spawn(
    argv[0]!,
    [...argv.slice(1), join(ROOT, 'dist/client.js'), '--node', 'nobody', '--nats', url, '--socket', join(cache, 'sock'), '--cache', cache],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const at = await new Promise<number>((resolve, reject) => {
    const seen = (d: Buffer) => (/bucket|client ready/.test(d.toString()) ? resolve(now()) : undefined);
    child.stdout!.on('data', seen);
    child.stderr!.on('data', seen);
    child.once('exit', (code) => reject(new Error(`the client exited ${code} before a bus line`)));
  });
  child.kill('SIGKILL');
  return at - started;
}

/** Milliseconds for the runtime to run an empty script: the part of the start no bundle can shave. */
async function bareStart(argv: string[]): Promise<number> {
  const script = join(tmpdir(), `mesh-empty-${process.pid}.mjs`);
  writeFileSync(script, '');
  const times: number[] = [];
  try {
    for (let i = 0; i < 7; i++) {
      const started = now();
      spawnSync(argv[0]!, [...argv.slice(1), script]);
      times.push(now() - started);
    }
  } finally {
    rmSync(script, { force: true });
  }
  return times.sort((a, b) => a - b)[3]!;
}
