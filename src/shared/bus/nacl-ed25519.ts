// What @nats-io/nkeys uses of tweetnacl, done by node:crypto's ed25519 (in Node since 12, and in deno):
// build.mjs puts this file in every bundle in place of tweetnacl, whose 33 KB of pure-JS curve
// arithmetic only ever signs a server's nonce or makes a key pair. Ed25519 signatures are
// deterministic, so each result is tweetnacl's byte for byte (test/nacl-ed25519.test.ts holds it).
import { createPrivateKey, createPublicKey, randomBytes as nodeRandomBytes, sign as nodeSign, verify as nodeVerify, type KeyObject } from 'node:crypto';

/** An Ed25519 PKCS#8 private key in DER, up to its 32-byte seed (RFC 8410). */
const PKCS8_PREFIX = Uint8Array.from([0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]);
/** An Ed25519 SubjectPublicKeyInfo in DER, up to its 32-byte public key (RFC 8410). */
const SPKI_PREFIX = Uint8Array.from([0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00]);
/** Bytes in a seed and in a public key. */
const KEY_BYTES = 32;
/** Bytes in tweetnacl's secret key: the seed, then the public key. */
const SECRET_KEY_BYTES = 64;
/** Bytes in a signature. */
const SIGNATURE_BYTES = 64;

/** A tweetnacl key pair: what `sign.keyPair.fromSeed` returns. */
export type SignKeyPair = {
  /** The 32-byte public key. */
  publicKey: Uint8Array;
  /** The seed and the public key, 64 bytes, as tweetnacl lays them. */
  secretKey: Uint8Array;
};

/** The DER `prefix` followed by the 32 key bytes, refused (as tweetnacl does) when not 32. */
function der(prefix: Uint8Array, key: Uint8Array, what: string): Buffer {
  if (key.length !== KEY_BYTES) throw new Error(`bad ${what} size`);
  return Buffer.concat([prefix, key]);
}

/** The private key of a 32-byte seed. */
function privateKeyOf(seed: Uint8Array): KeyObject {
  return createPrivateKey({ key: der(PKCS8_PREFIX, seed, 'seed'), format: 'der', type: 'pkcs8' });
}

/** The key pair of a 32-byte seed. */
function fromSeed(seed: Uint8Array): SignKeyPair {
  const spki = createPublicKey(privateKeyOf(seed)).export({ format: 'der', type: 'spki' });
  const publicKey = new Uint8Array(spki.subarray(SPKI_PREFIX.length));
  const secretKey = new Uint8Array(SECRET_KEY_BYTES);
  secretKey.set(seed);
  secretKey.set(publicKey, KEY_BYTES);
  return { publicKey, secretKey };
}

/** The 64-byte signature of `message` by a 64-byte secret key. */
function detached(message: Uint8Array, secretKey: Uint8Array): Uint8Array {
  if (secretKey.length !== SECRET_KEY_BYTES) throw new Error('bad secret key size');
  return new Uint8Array(nodeSign(null, message, privateKeyOf(secretKey.subarray(0, KEY_BYTES))));
}

/** Whether `signature` is `publicKey`'s over `message`. */
function verify(message: Uint8Array, signature: Uint8Array, publicKey: Uint8Array): boolean {
  if (signature.length !== SIGNATURE_BYTES) throw new Error('bad signature size');
  const key = createPublicKey({ key: der(SPKI_PREFIX, publicKey, 'public key'), format: 'der', type: 'spki' });
  return nodeVerify(null, message, key, signature);
}

/** `n` random bytes from the system's generator. */
function randomBytes(n: number): Uint8Array {
  return new Uint8Array(nodeRandomBytes(n));
}

/** Curve (xkey) encryption needs XSalsa20-Poly1305, which node:crypto has not: no program of the mesh seals with an xkey. */
function noCurve(): never {
  throw new Error('curve (xkey) encryption is not in this bundle: only ed25519 nkeys are');
}

/** tweetnacl's shape, as nkeys reaches it (`nacl.sign.detached.verify`, `nacl.box.open`, …). */
const nacl = {
  sign: { keyPair: { fromSeed }, detached: Object.assign(detached, { verify }) },
  randomBytes,
  scalarMult: { base: noCurve },
  box: Object.assign(noCurve, { open: noCurve }),
};

export default nacl;
