// Bundles each entry of src/ into one self-contained ES module under dist/, runnable by node and deno.
import { build } from 'esbuild';
import { readFile } from 'node:fs/promises';

const pkg = JSON.parse(await readFile(new URL('./package.json', import.meta.url), 'utf8'));

// nats.js reaches for `require` at run time; an ES module has none unless the banner gives it one.
const banner = "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);";

const ENTRIES = ['server', 'client', 'engine'];

await Promise.all(ENTRIES.map((name) => build({
  entryPoints: [`src/${name}.ts`],
  outfile: `dist/${name}.js`,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  minify: true,
  sourcemap: true,
  banner: { js: banner },
  define: { __VERSION__: JSON.stringify(pkg.version) },
  logLevel: 'warning',
})));
