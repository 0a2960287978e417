// The tests' and benches' temp dirs: each made fresh under the OS temp dir and removed when this
// process exits, however it exits short of a kill — a pass, a failed assertion, a wait that timed out
// or an error no hook caught. A test may remove its dir sooner (removeTempDir, or rmSync); what it
// does not is removed then. Nothing under the temp dir outlives the run (test/run.mjs checks).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The dirs made and not yet removed. */
const made = new Set<string>();

process.once('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A fresh dir `<tmpdir>/<prefix>XXXXXX`, removed when this process exits at the latest. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.add(dir);
  return dir;
}

/** Removes a dir (tempDir's or any other) and all it holds, now; nothing when it is gone already. */
export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  made.delete(dir);
}
