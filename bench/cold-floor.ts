// The bus's cold floor of bench/latency.ts's scale rows: bench/cold-floor-run.ts bundled as the
// client is (esbuild, one file, no node_modules beside it) and spawned fresh, timed from the spawn to
// its `done` line, as the client's row is timed from its spawn.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { now, ROOT, type BenchMesh } from './lib.ts';

/** What one run of the floor took and the CPU its process used, in seconds. */
export type FloorRun = { s: number; cpu: number };

/** Bundles the floor's process into the mesh's directory once; returns its path. */
function bundleFloor(mesh: BenchMesh): string {
  const out = join(mesh.dir, 'cold-floor.mjs');
  buildSync({
    entryPoints: [join(ROOT, 'bench/cold-floor-run.ts')],
    bundle: true,
    minify: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: out,
    logLevel: 'error',
    // nats.js is CommonJS: an ESM bundle needs a require for the node built-ins it loads.
    banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
  });
  return out;
}

/** The needs a floor writes beside its reports: so many a plan, each of so many bytes. */
export type FloorNeeds = { each: number; bytes: number };

/**
 * The floor for `node`'s cold start, in a fresh process: its plans and config read through two
 * filtered watches, one `reportBytes`-sized entry a plan put (under `floorNode`), all at once; with
 * `archives`, each plan's archive read by direct get before the puts; with `needs`, that many
 * need-sized entries a plan put beside its report.
 */
export async function measureFloor(
  mesh: BenchMesh,
  node: string,
  floorNode: string,
  reportBytes: number,
  archives: boolean,
  needs?: FloorNeeds,
): Promise<FloorRun> {
  const bundle = bundleFloor(mesh);
  const started = now();
  const flags = [...(archives ? ['--archives'] : []), ...(needs ? ['--needs', `${needs.each}:${needs.bytes}`] : [])];
  const child = spawn(process.execPath, [bundle, mesh.url, node, floorNode, String(reportBytes), ...flags], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const [at, cpu] = await new Promise<[number, number]>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      const said = /^done \d+ (\d+)$/m.exec(d.toString());
      if (said) resolve([now(), Number(said[1]) / 1e6]);
    });
    child.once('exit', (code) => reject(new Error(`the cold floor exited ${code} before saying done`)));
  });
  await exited;
  return { s: (at - started) / 1000, cpu };
}
