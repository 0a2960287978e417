// SIGTERM with the bus gone: an operator stopping a lab stops nats-server with the rest, or first.
// The seat, the client and the vault each still say "stopped" and exit 0 — the drain that cannot
// happen is said at warning, never an error line without a level (it was, with exit 1).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { cleanupBundles, copyBundleAlone, ensureBuilt, startBundle, type Running } from './helpers/bundle.ts';
import { startNats } from './helpers/nats.ts';
import { tempDir } from './helpers/temp.ts';

let work = '';
test.before(() => {
  for (const name of ['server', 'client', 'vault']) ensureBuilt(name);
  work = tempDir('mesh-stop-');
});
test.after(() => {
  cleanupBundles();
  rmSync(work, { recursive: true, force: true });
});

test('the seat, a client and the vault, SIGTERM’d once nats-server is gone, say stopped and exit 0', async () => {
  const nats = await startNats();
  const programs: [string, Running][] = [];
  try {
    const seat = startBundle('node', copyBundleAlone('server'), 'server', ['--nats', nats.url]);
    await seat.waitForLog(/seat ready/, 20_000);
    const cache = join(work, 'cache');
    mkdirSync(cache);
    const client = startBundle('node', copyBundleAlone('client'), 'client', [
      '--node',
      'n1',
      '--nats',
      nats.url,
      '--socket',
      join(work, 'none.sock'),
      '--cache',
      cache,
    ]);
    await client.waitForLog(/client ready|waiting|engine/, 20_000);
    const vault = startBundle('node', copyBundleAlone('vault'), 'vault', ['--nats', nats.url, '--store', join(work, 'store'), '--lab']);
    await vault.waitForLog(/vault ready/, 20_000);
    programs.push(['seat', seat], ['client', client], ['vault', vault]);
    await nats.kill();
    await new Promise((r) => setTimeout(r, 300));
    for (const [, running] of programs) running.child.kill('SIGTERM');
    for (const [name, running] of programs) {
      const { code } = await running.exited;
      const stderr = running.stderr();
      assert.is(code, 0, `${name} exited ${code}:\n${stderr}`);
      assert.match(stderr, /\bstopped\n/, `${name} says stopped:\n${stderr}`);
      for (const line of stderr.trim().split('\n')) assert.match(line, /^\S+ (debug|info|notice|warning|error) /, `${name}: a line without a level: ${line}`);
    }
  } finally {
    for (const [, running] of programs) running.kill();
    await nats.cleanup();
  }
});

test.run();
