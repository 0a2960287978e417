// Preloaded into a bench's worker processes (`--require`): @nats-io/nkeys loads tweetnacl with a
// CommonJS require, and every bundle carries node:crypto's ed25519 in its place (build.mjs ALIAS,
// src/shared/bus/nacl-ed25519.ts). A worker run from source, a hundred clients logging in at once, signed
// each nonce in tweetnacl's pure JS (25 ms a login here against 0.6): its logins came too late for
// the server, which closed them, and a few connects took 20 s. Aliased here, it signs as a node does.
const Module = require('node:module');
const { join } = require('node:path');

const SHIM = join(__dirname, 'nacl-shim.cjs');
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  return resolve.call(this, request === 'tweetnacl' ? SHIM : request, ...rest);
};
