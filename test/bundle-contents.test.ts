// What server.js is built from (issue 32): the seat and the operator's commands judge a module with
// src/module/, never with the client's stages, so no file of src/client/ goes into the server's bundle.
// Built as `node build.mjs` builds it (its own options), in memory, for esbuild's metafile.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type BuildOptions, type Metafile } from 'esbuild';
import { ROOT } from './helpers/bundle.ts';

/** build.mjs's options of one bundle (a plain .mjs: its type said here). */
type BuildScript = { buildOptions(name: string): BuildOptions };

/** The source files esbuild read to build `name`'s bundle, relative to the repository root. */
async function inputsOf(name: string): Promise<string[]> {
  const { buildOptions } = (await import(pathToFileURL(join(ROOT, 'build.mjs')).href)) as BuildScript;
  const result = await build({ ...buildOptions(name), absWorkingDir: ROOT, write: false, metafile: true, minify: false, sourcemap: false });
  return Object.keys((result.metafile as Metafile).inputs);
}

test('server.js bundles no file of src/client/', async () => {
  const inputs = await inputsOf('server');
  assert.ok(
    inputs.some((f) => f.startsWith('src/module/')),
    `the metafile names no file of src/module/ (read: ${inputs.filter((f) => f.startsWith('src/')).length} files of src/)`,
  );
  assert.equal(
    inputs.filter((f) => f.startsWith('src/client/')),
    [],
  );
});

test.run();
