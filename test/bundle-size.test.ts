// The bundles stay small enough to copy to a thousand nodes and to load fast (issue 22 item 4): the
// client at most 380 KiB (350 until issue 33 added liveness, provenance and drift: 353 KiB; 360 until issue 34's
// keyed reads and record of written keys: 363.8 KiB; 370 until its archive pack: 371.4 KiB; 375 until the pack's
// compaction and shared read handle: 375.4 KiB; @nats-io/obj, 16.6 KiB, is there for the archive's fallback read),
// the SDK a module imports for its asks at most 120 KiB and free of JetStream.
// build.mjs says where the bytes went (MESH_METAFILE=1 writes each bundle's metafile).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { bundleFile, ensureBuilt, ROOT } from './helpers/bundle.ts';

/** The most bytes each bundle may have. */
const MAX_BYTES: Record<string, number> = {
  client: 380 * 1024,
  sdk: 120 * 1024,
};

test.before(() => {
  for (const name of Object.keys(MAX_BYTES)) ensureBuilt(name);
});

for (const [name, max] of Object.entries(MAX_BYTES)) {
  test(`${bundleFile(name)} is at most ${max / 1024} KiB`, () => {
    const bytes = statSync(join(ROOT, 'dist', bundleFile(name))).size;
    assert.ok(bytes <= max, `${bundleFile(name)} is ${(bytes / 1024).toFixed(1)} KiB, over ${max / 1024} KiB`);
  });
}

test('sdk.mjs carries no JetStream client (its asks are core NATS: a request and a subscription)', () => {
  const sdk = readFileSync(join(ROOT, 'dist', 'sdk.mjs'), 'utf8');
  assert.not.ok(sdk.includes('$JS.API'), 'the JetStream API prefix is in sdk.mjs');
});

test('no bundle carries tweetnacl or js-sha256: node:crypto signs and hashes in their place', () => {
  for (const name of ['server', 'client', 'engine', 'vault', 'sdk', 'provider', 'postgres-provider']) {
    const map = JSON.parse(readFileSync(join(ROOT, 'dist', `${bundleFile(name)}.map`), 'utf8')) as { sources: string[] };
    const carried = map.sources.filter((s) => /node_modules\/(tweetnacl|js-sha256)\//.test(s));
    assert.equal(carried, [], bundleFile(name));
  }
});

test.run();
