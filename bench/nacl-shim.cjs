// tweetnacl's place in a bench worker (bench/nacl-alias.cjs): the bundles' node:crypto stand-in.
module.exports = require('../src/shared/bus/nacl-ed25519.ts').default;
