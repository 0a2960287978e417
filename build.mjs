// Bundles each entry of src/ into one self-contained ES module under dist/, runnable by node and deno.
import { build } from 'esbuild';
import { readFile } from 'node:fs/promises';

const pkg = JSON.parse(await readFile(new URL('./package.json', import.meta.url), 'utf8'));

// nats.js reaches for `require` at run time; an ES module has none unless the banner gives it one.
const banner = "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);";

// Each bundle dist/<name>.js and its source: the programs' thin entries, and the SDK a provider module imports.
const ENTRIES = { server: 'src/server.ts', client: 'src/client.ts', engine: 'src/engine.ts', vault: 'src/vault.ts', sdk: 'src/sdk/index.ts' };

await Promise.all(
  Object.entries(ENTRIES).map(([name, entry]) =>
    build({
      entryPoints: [entry],
      outfile: `dist/${name}.js`,
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      minify: !process.env.MESH_NO_MINIFY,
      sourcemap: true,
      banner: { js: banner },
      define: { __VERSION__: JSON.stringify(pkg.version) },
      logLevel: 'warning',
    }),
  ),
);
