// The js-sha256 stand-in every bundle carries (src/shared/bus/sha256-node.ts, aliased by build.mjs): for
// what @nats-io/obj asks of it — create, update in chunks, digest — it gives js-sha256's own digest.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes } from 'node:crypto';
import jsSha256 from 'js-sha256';
import { sha256 } from '../src/shared/bus/sha256-node.ts';

test('a digest over chunks is js-sha256’s, for empty, small and chunked inputs', () => {
  for (const sizes of [[], [0], [1], [63, 64, 65], [128 * 1024, 7, 128 * 1024]]) {
    const ours = sha256.create();
    const theirs = jsSha256.sha256.create();
    for (const n of sizes) {
      const chunk = new Uint8Array(randomBytes(n));
      ours.update(chunk);
      theirs.update(chunk);
    }
    assert.equal(Buffer.from(Uint8Array.from(ours.digest())).toString('hex'), Buffer.from(theirs.digest()).toString('hex'), `chunks ${sizes.join(',')}`);
  }
});

test.run();
