// What @nats-io/obj uses of js-sha256 (`sha256.create()`, then `update` and `digest`), done by
// node:crypto: build.mjs puts this file in every bundle in place of js-sha256's 9 KB of pure-JS hashing,
// which obj runs on every chunk of an object it reads (a module's archive). Node's hash gives the
// same digest (test/sha256-node.test.ts holds it), faster.
import { createHash, type Hash } from 'node:crypto';

/** js-sha256's entry, as obj reaches it: a new incremental SHA-256. */
export const sha256 = {
  /** A new hash; `update` takes bytes, `digest` gives the 32 bytes. */
  create(): Hash {
    return createHash('sha256');
  },
};
