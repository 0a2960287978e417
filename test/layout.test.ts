// The house's rules (STYLE.md, issue 19), checked on the source as it is: no import circle in src/,
// `src/shared/` imports nothing else of src/, `src/module/` nothing but `src/shared/` and itself (issue 32),
// and one file alone reaches nats.js's private parts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ROOT } from './helpers/bundle.ts';

const SRC = join(ROOT, 'src');

/** Every .ts file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

/** The src/ files a file imports (type imports too: a circle of types still ties two files together). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/^(?:import|export)\b[^;]*?from\s+'(\.[^']+)'/gms)].map((m) => m[1]!);
  return specs.map((s) => resolve(dirname(file), s));
}

const files = sources(SRC);
const graph = new Map(files.map((f) => [f, importsOf(f)]));
const name = (f: string) => relative(ROOT, f);

test('no file of src/ imports itself back through others', () => {
  const circles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (file: string, path: string[]): void => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'open') return void circles.push([...path.slice(path.indexOf(file)), file].map(name).join(' → '));
    state.set(file, 'open');
    for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
    state.set(file, 'done');
  };
  for (const file of files) visit(file, []);
  assert.equal(circles, []);
});

test('src/shared/ imports nothing of src/ outside itself', () => {
  const shared = join(SRC, 'shared');
  const out = files
    .filter((f) => f.startsWith(shared))
    .flatMap((f) =>
      graph
        .get(f)!
        .filter((t) => !t.startsWith(shared))
        .map((t) => `${name(f)} → ${name(t)}`),
    );
  assert.equal(out, []);
});

test('src/module/ imports nothing of src/ but src/shared/ and itself', () => {
  const module = join(SRC, 'module');
  const shared = join(SRC, 'shared');
  const out = files
    .filter((f) => f.startsWith(module + '/'))
    .flatMap((f) =>
      graph
        .get(f)!
        .filter((t) => !t.startsWith(module + '/') && !t.startsWith(shared + '/'))
        .map((t) => `${name(f)} → ${name(t)}`),
    );
  assert.equal(out, []);
});

test('one file alone reaches the private parts of nats.js', () => {
  const PRIVATE = /getConsumerOpts|\bcursor\.|consumer\.api\b|\.options\?\.inboxPrefix|as unknown as \{ (options|reset|consumer)/;
  const touching = files.filter((f) => PRIVATE.test(readFileSync(f, 'utf8'))).map(name);
  assert.equal(touching, ['src/shared/bus/watch/internals.ts']);
});

test.run();
