// Bundles each entry of src/ into one self-contained file under dist/, runnable by every Node from 20.0 and by deno
// with no module-type detection (DESIGN §10; the decision is in docs/decisions.md, "Bundles without module detection").
import { build } from 'esbuild';
import { realpathSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';

const pkg = JSON.parse(await readFile(new URL('./package.json', import.meta.url), 'utf8'));

// Each bundle and its source: the programs' thin entries (dist/<name>.js), the reference vault and the PostgreSQL provider (programs too),
// the SDK a module imports for its asks (dist/sdk.mjs) and the helper a provider module imports (dist/provider.mjs).
const ENTRIES = {
  server: 'src/server.ts',
  client: 'src/client.ts',
  engine: 'src/engine.ts',
  vault: 'src/vault.ts',
  sdk: 'src/sdk/index.ts',
  provider: 'src/sdk/provider-index.ts',
  'postgres-provider': 'examples/postgres-provider/main.ts',
};

// What a module's code imports rather than runs: an ES module named .mjs, which every Node and deno load as one.
const LIBRARIES = new Set(['sdk', 'provider']);

// Bundles whose errors reach a module's own code or an operator as they are: their classes and functions keep
// their names (an uncaught AskError prints `AskError`, not the minified `de`), for ~4% of their bytes. The daemons
// catch and say their errors themselves, and client.js keeps within its size (test/bundle-size.test.ts).
const KEEP_NAMES = new Set(['sdk', 'provider', 'postgres-provider']);

// Node prints the source line an uncaught error was made on: in a library minified to one line a statement, not
// a line of ~3 KB. Breaking lines past this many characters costs a newline each.
const LIBRARY_LINE_LIMIT = 120;

// A program is a script with no import, export or import.meta, so Node 20.0–20.18 (which never detects) runs it as
// CommonJS, and deno or Node under a package.json of "type": "module" run it as an ES module. The bundle's code runs
// inside a function given `require`: CommonJS's own, or, in an ES module (which has none), one made by node:module.
// No top-level await survives this (esbuild refuses it, naming the line): an entry runs an async main instead.
const PROGRAM_WRAP = {
  banner: "((main) => typeof require === 'function' ? main(require) : import('node:module').then((m) => main(m.createRequire('/'))))((require) => {",
  footer: '});',
};

// An ES module has no `require`, which nats.js reaches for at run time: the banner gives it one.
const LIBRARY_BANNER = "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);";

// What every bundle carries in place of two pure-JS crypto libraries of nats.js: nkeys' signing and the
// object store's SHA-256, each done by node:crypto (each file says why and what it implements).
const ALIAS = { tweetnacl: './src/shared/bus/nacl-ed25519.ts', 'js-sha256': './src/shared/bus/sha256-node.ts' };

// Modules of the dependencies that nothing of the mesh runs, each loaded as a stand-in of a few bytes.
const STAND_INS = [
  // nats-core's benchmark and WebSocket transport: nats.js's own code never requires them but from its index,
  // whose re-exported names (Bench, wsconnect, …) then read as undefined.
  { filter: /[\\/]@nats-io[\\/]nats-core[\\/]lib[\\/](bench|ws_transport)\.js$/, contents: 'module.exports = {};' },
  // nkeys' curve (xkey) pairs, which need the XSalsa20 the tweetnacl stand-in has not: the mesh signs, never seals.
  {
    filter: /[\\/]@nats-io[\\/]nkeys[\\/]lib[\\/]curve\.js$/,
    contents:
      "class CurveKP { constructor() { throw new Error('curve (xkey) keys are not in this bundle: only ed25519 nkeys are'); } }\n" +
      'module.exports = { curveKeyLen: 32, curveNonceLen: 24, CurveKP };',
  },
  // OpenTelemetry's API, which prom-client reads only for exemplars (`enableExemplars`), which the seat's figures
  // never ask: 21 KB of server.js otherwise.
  { filter: /[\\/]@opentelemetry[\\/]api[\\/]/, contents: 'module.exports = {};' },
];
const standIns = {
  name: 'nats-stand-ins',
  setup(b) {
    for (const { filter, contents } of STAND_INS) b.onLoad({ filter }, () => ({ contents, loader: 'js' }));
  },
};

// nats.js's indexes re-export each name as tsc writes it, a getter of ~70 bytes (20 KB of client.js):
// `Object.defineProperty(exports, "X", { enumerable: true, get: function () { return m.X; } });`.
// Each such line becomes a call of one helper that defines the same enumerable getter, read live.
const REEXPORT =
  /^Object\.defineProperty\(exports, "([A-Za-z_$][\w$]*)", \{ enumerable: true, get: function \(\) \{ return ([A-Za-z_$][\w$]*)\.\1; \} \}\);$/gm;
// Appended, not prepended: a function declaration is hoisted, and the file's "use strict" stays its first statement
// (its lines, and so its source map, stay where they were).
const REEXPORT_HELPER = '\nfunction __meshReexport(o, m, k) { Object.defineProperty(o, k, { enumerable: true, get: () => m[k] }); }\n';
const compactReexports = {
  name: 'compact-reexports',
  setup(b) {
    b.onLoad({ filter: /[\\/]node_modules[\\/]@nats-io[\\/].*\.js$/ }, async ({ path }) => {
      const source = await readFile(path, 'utf8');
      const compacted = source.replace(REEXPORT, '__meshReexport(exports, $2, "$1");');
      return compacted === source ? undefined : { contents: compacted + REEXPORT_HELPER, loader: 'js' };
    });
  },
};

// nats.js's RequestOne, once answered, calls its own cancel(), which rejects the settled promise with a new
// RequestError: an Error and its stack trace made and dropped for every answered request (a direct get of each
// of 3,000 config keys and 2,000 archive parts at a cold start of 1,000 modules: 6 % of the client's CPU there).
// The answer's resolver drops the request from the mux itself instead, the one thing cancel() does then.
const ANSWERED_CANCEL = {
  file: /[\\/]@nats-io[\\/]nats-core[\\/]lib[\\/]request\.js$/,
  from: '            this.deferred.resolve(msg);\n        }\n        this.cancel();\n    }',
  to: '            this.deferred.resolve(msg);\n        }\n        this.mux.cancel(this);\n    }',
};
const answeredRequests = {
  name: 'answered-requests',
  setup(b) {
    b.onLoad({ filter: ANSWERED_CANCEL.file }, async ({ path }) => {
      const source = await readFile(path, 'utf8');
      // A nats.js whose text moved fails the build here, not silently: the patch is looked at again.
      if (!source.includes(ANSWERED_CANCEL.from)) throw new Error(`${path}: RequestOne.resolver is not as build.mjs expects; see ANSWERED_CANCEL`);
      return { contents: source.replace(ANSWERED_CANCEL.from, ANSWERED_CANCEL.to), loader: 'js' };
    });
  },
};

/** The esbuild options that differ between a program and a library. */
function formatOf(name) {
  if (LIBRARIES.has(name)) return { format: 'esm', outfile: `dist/${name}.mjs`, banner: { js: LIBRARY_BANNER }, lineLimit: LIBRARY_LINE_LIMIT };
  return { format: 'iife', outfile: `dist/${name}.js`, banner: { js: PROGRAM_WRAP.banner }, footer: { js: PROGRAM_WRAP.footer } };
}

// MESH_METAFILE=1 writes dist/<name>.meta.json beside each bundle: where its bytes come from (esbuild's analyzer reads it).
const WRITE_METAFILE = Boolean(process.env.MESH_METAFILE);

/** The esbuild options of one bundle by its name (a key of ENTRIES), as `node build.mjs` builds it; test/bundle-contents.test.ts builds with them. */
export function buildOptions(name) {
  return {
    entryPoints: [ENTRIES[name]],
    ...formatOf(name),
    bundle: true,
    platform: 'node',
    target: 'node20',
    minify: !process.env.MESH_NO_MINIFY,
    sourcemap: true,
    define: { __VERSION__: JSON.stringify(pkg.version) },
    alias: ALIAS,
    mainFields: ['module', 'main'],
    plugins: [standIns, answeredRequests, compactReexports],
    keepNames: KEEP_NAMES.has(name),
    metafile: WRITE_METAFILE,
    logLevel: 'warning',
  };
}

/**
 * A bench's own program bundled as the client is (the same aliases, stand-ins and nats.js patches, so it
 * measures the code that ships), as an ES module at `outfile`: bench/fleet-pool.ts runs the fleet's clients so.
 */
export function benchOptions(entry, outfile) {
  return { ...buildOptions('client'), entryPoints: [entry], format: 'esm', outfile, banner: { js: LIBRARY_BANNER }, footer: undefined, sourcemap: 'inline' };
}

// Built when run (`node build.mjs`), not when a test imports the options; Node names the main file by its real path.
if (process.argv[1] !== undefined && pathToFileURL(realpathSync(process.argv[1])).href === import.meta.url) {
  await Promise.all(
    Object.keys(ENTRIES).map(async (name) => {
      const result = await build(buildOptions(name));
      if (WRITE_METAFILE) await writeFile(`dist/${name}.meta.json`, JSON.stringify(result.metafile));
    }),
  );
}
