// Benchmarks the client (DESIGN §10) as a user sees it, with the reference engine (dist/engine.js)
// writing real files: config put → the file's new bytes on disk (the engine's log line for the
// request, bench/engine-lib.ts says why; the file is then read and must hold the value), beside the
// raw bus floor (the same put → a plain KV watcher) measured for the same changes; the time and peak
// memory for a client to bring many modules of three files each to `applied`, every file written;
// the bundle's start.
//
//   node build.mjs && node --import tsx bench/latency.ts [--changes N] [--gap-ms MS] [--modules N] [--root-in DIR[,DIR…]] [--rows latency,scale,start]
//
// --root-in is where the engine's root is made, each in turn (default: /dev/shm when it is a tmpfs,
// then the OS temp dir). The engine fsyncs every file and directory it writes (DESIGN §9): on a tmpfs
// that costs nothing, so the rows show the mesh's own cost; on a disk they show what a node with
// that disk sees, and the header says what one such write costs there alone.
import { existsSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { measureStart } from './bundle-start.ts';
import { measureLatency } from './change-row.ts';
import { diskWrite, engineAlone, fileSystemOf } from './engine-lib.ts';
import { numberArg, startBenchMesh, stringArg } from './lib.ts';
import { measureScale } from './scale-row.ts';

const CHANGES = numberArg('changes', 1000);
const MODULES_N = numberArg('modules', 1000);
const BASES = stringArg('root-in', defaultBases()).split(',');
/** How long the engine sits idle before each request of its idle line: about a change row's pace. */
const IDLE_GAP_MS = 2;
/** Which rows to measure (all by default): `--rows latency,scale,start`. */
const ROWS = new Set(stringArg('rows', 'latency,scale,start').split(','));

/** A tmpfs (the mesh's own cost) when there is one, then the OS temp dir (a disk, most often). */
function defaultBases(): string {
  const tmpfs = existsSync('/dev/shm') && fileSystemOf('/dev/shm') === 'tmpfs' ? ['/dev/shm'] : [];
  return [...tmpfs, tmpdir()].join(',');
}

async function main(): Promise<void> {
  const mesh = await startBenchMesh();
  try {
    for (const [i, base] of BASES.entries()) {
      const write = diskWrite(base);
      const load = loadavg()
        .map((l) => l.toFixed(2))
        .join(' ');
      console.log(
        `engine root in ${base} (${fileSystemOf(base)}): one small file written there as the engine does (temp, fsync, rename, directory fsync) p50 ${write.p50.toFixed(2)} ms, p99 ${write.p99.toFixed(2)} ms; load average ${load}`,
      );
      if (ROWS.has('latency')) {
        const busy = await engineAlone(base, 0);
        const idle = await engineAlone(base, IDLE_GAP_MS);
        console.log(
          `the reference engine alone (no bus), a one-file request: back to back p50 ${busy.p50.toFixed(2)} ms, ${busy.cpu.toFixed(2)} ms of its CPU; each after ${IDLE_GAP_MS} ms idle p50 ${idle.p50.toFixed(2)} ms, ${idle.cpu.toFixed(2)} ms of its CPU`,
        );
      }
      // The stub's row does not depend on the file system: measured once.
      if (ROWS.has('latency')) await measureLatency(mesh, base, String(i), CHANGES, i === 0);
      if (ROWS.has('scale')) await measureScale(mesh, base, String(i), MODULES_N);
    }
    if (ROWS.has('start')) await measureStart(mesh);
  } finally {
    await mesh.close();
  }
}

await main();
