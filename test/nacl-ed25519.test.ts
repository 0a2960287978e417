// The tweetnacl stand-in every bundle carries (src/shared/bus/nacl-ed25519.ts, aliased by build.mjs):
// for what nkeys asks of it — a key pair from a seed, a detached signature and its check — it gives
// tweetnacl's own bytes and answers, and it refuses the sizes tweetnacl refuses.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes } from 'node:crypto';
import tweetnacl from 'tweetnacl';
import nacl from '../src/shared/bus/nacl-ed25519.ts';

test('a key pair from a seed is tweetnacl’s, public and secret key alike', () => {
  for (let i = 0; i < 50; i++) {
    const seed = new Uint8Array(randomBytes(32));
    const ours = nacl.sign.keyPair.fromSeed(seed);
    const theirs = tweetnacl.sign.keyPair.fromSeed(seed);
    assert.equal(Buffer.from(ours.publicKey).toString('hex'), Buffer.from(theirs.publicKey).toString('hex'));
    assert.equal(Buffer.from(ours.secretKey).toString('hex'), Buffer.from(theirs.secretKey).toString('hex'));
  }
});

test('a detached signature is tweetnacl’s byte for byte, and each side verifies the other’s', () => {
  for (let i = 0; i < 50; i++) {
    const { secretKey, publicKey } = tweetnacl.sign.keyPair.fromSeed(new Uint8Array(randomBytes(32)));
    const message = new Uint8Array(randomBytes(i * 7));
    const ours = nacl.sign.detached(message, secretKey);
    assert.equal(Buffer.from(ours).toString('hex'), Buffer.from(tweetnacl.sign.detached(message, secretKey)).toString('hex'));
    assert.ok(nacl.sign.detached.verify(message, ours, publicKey));
    assert.ok(tweetnacl.sign.detached.verify(message, ours, publicKey));
  }
});

test('a signature over other bytes, or by another key, does not verify', () => {
  const a = nacl.sign.keyPair.fromSeed(new Uint8Array(32).fill(1));
  const b = nacl.sign.keyPair.fromSeed(new Uint8Array(32).fill(2));
  const message = new TextEncoder().encode('nonce');
  const signature = nacl.sign.detached(message, a.secretKey);
  assert.not.ok(nacl.sign.detached.verify(new TextEncoder().encode('other'), signature, a.publicKey));
  assert.not.ok(nacl.sign.detached.verify(message, signature, b.publicKey));
});

test('wrong sizes are refused as tweetnacl refuses them, and curve encryption says it is not here', () => {
  assert.throws(() => nacl.sign.keyPair.fromSeed(new Uint8Array(31)), /bad seed size/);
  assert.throws(() => nacl.sign.detached(new Uint8Array(1), new Uint8Array(32)), /bad secret key size/);
  assert.throws(() => nacl.sign.detached.verify(new Uint8Array(1), new Uint8Array(63), new Uint8Array(32)), /bad signature size/);
  assert.throws(() => nacl.sign.detached.verify(new Uint8Array(1), new Uint8Array(64), new Uint8Array(31)), /bad public key size/);
  assert.throws(() => nacl.box(), /not in this bundle/);
  assert.throws(() => nacl.scalarMult.base(), /not in this bundle/);
});

test('random bytes are as many as asked, and differ', () => {
  assert.is(nacl.randomBytes(32).length, 32);
  assert.is.not(Buffer.from(nacl.randomBytes(32)).toString('hex'), Buffer.from(nacl.randomBytes(32)).toString('hex'));
});

test.run();
