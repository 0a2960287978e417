// The house's rules (STYLE.md, issues 19 and 32), checked on the source as it is: no import circle in
// src/; the nevers between the programs (the seat and the client apart, the engine apart from both,
// the SDK apart from both); `src/shared/` imports nothing else of src/, `src/module/` nothing but
// `src/shared/` and itself; the client's folders import one way along its pipeline; no file past its
// length; one file alone reaches nats.js's private parts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { importsOf, lineCount, partOf, shown, sources, SRC, type Import } from './helpers/source-graph.ts';

const files = sources(SRC);
const graph = new Map(files.map((f) => [f, importsOf(f)]));
const imports = [...graph.values()].flat();
const arrow = (i: Import) => `${shown(i.from)} → ${shown(i.to)}`;

test('no file of src/ imports itself back through others', () => {
  const circles: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const visit = (file: string, path: string[]): void => {
    if (state.get(file) === 'done') return;
    if (state.get(file) === 'open') return void circles.push([...path.slice(path.indexOf(file)), file].map(shown).join(' → '));
    state.set(file, 'open');
    for (const next of graph.get(file) ?? []) visit(next.to, [...path, file]);
    state.set(file, 'done');
  };
  for (const file of files) visit(file, []);
  assert.equal(circles, []);
});

/** The imports from a file of one of the parts `from` into one of the parts `to` (a part: src/<part>.ts and src/<part>/). */
function crossings(from: string[], to: string[]): string[] {
  return imports.filter((i) => from.includes(partOf(i.from)) && to.includes(partOf(i.to))).map(arrow);
}

// The one arrow the architecture forbids (issue 32): server.js bundling the client's stages.
test('src/server imports nothing of src/client', () => {
  assert.equal(crossings(['server'], ['client']), []);
});

test('src/client imports nothing of src/server', () => {
  assert.equal(crossings(['client'], ['server']), []);
});

test('neither src/server nor src/client imports src/engine: the engine is the other end of the fill socket', () => {
  assert.equal(crossings(['server', 'client'], ['engine']), []);
});

test('src/sdk imports nothing of src/client or src/server', () => {
  assert.equal(crossings(['sdk'], ['client', 'server']), []);
});

// src/shared/'s rooms stand on one another in one order (issue 32): the floor (base) imports none of
// them, the contract only the floor, the bus the contract and the floor, the command line any of them.
const SHARED_ROOMS = ['base', 'contract', 'bus', 'cli'] as const;

test("src/shared/'s rooms import only the rooms below them: base, contract, bus, cli", () => {
  const shared = join(SRC, 'shared');
  const roomOf = (file: string) => relative(shared, file).split('/')[0] ?? '';
  const wrong = imports
    .filter((i) => partOf(i.from) === 'shared' && partOf(i.to) === 'shared')
    .filter((i) => {
      const from = SHARED_ROOMS.indexOf(roomOf(i.from) as (typeof SHARED_ROOMS)[number]);
      const to = SHARED_ROOMS.indexOf(roomOf(i.to) as (typeof SHARED_ROOMS)[number]);
      return from < 0 || to < 0 || to > from;
    })
    .map(arrow);
  assert.equal(wrong, []);
});

test('src/shared/ imports nothing of src/ outside itself', () => {
  assert.equal(
    crossings(
      ['shared'],
      [...new Set(files.map(partOf))].filter((p) => p !== 'shared'),
    ),
    [],
  );
});

/**
 * The client's stages in the order a change travels (src/client/node.ts, the README's map): the plan
 * watch at the head, the value sources, the scheduler and a module's run, archives, the fill, the
 * handoff to the engine, the report on the bus. A stage may import any later stage (it drives it or
 * hands it its work); from an earlier stage it imports types alone (what that stage hands it), and
 * two stages never import each other. The wiring (the files of src/client/ itself), the one-shot
 * modes (commands/) and the alive message beside the pipeline (alive/) come after every stage: no stage imports them.
 */
const CLIENT_PIPELINE = ['plans', 'sources', 'schedule', 'archive', 'fill', 'handoff', 'report'];
const CLIENT = join(SRC, 'client');

/** A client file's place in the pipeline: its stage's index, or past the last stage for the wiring and the modes. */
function clientStage(file: string): number {
  const folder = relative(CLIENT, file).split('/');
  const stage = folder.length > 1 ? CLIENT_PIPELINE.indexOf(folder[0]!) : -1;
  return stage === -1 ? CLIENT_PIPELINE.length : stage;
}

test('every folder of src/client/ is a stage of its pipeline, the one-shot modes, or the alive message', () => {
  const folders = readdirSync(CLIENT).filter((name) => statSync(join(CLIENT, name)).isDirectory());
  assert.equal(folders.filter((f) => f !== 'commands' && f !== 'alive' && !CLIENT_PIPELINE.includes(f)).sort(), []);
});

test("the client's stages import one way along its pipeline: later stages, or an earlier one's types", () => {
  const inClient = imports.filter((i) => partOf(i.from) === 'client' && partOf(i.to) === 'client');
  const wrong: string[] = [];
  const pairs = new Set<string>();
  for (const i of inClient) {
    const [from, to] = [clientStage(i.from), clientStage(i.to)];
    if (from === to || from === CLIENT_PIPELINE.length) continue;
    pairs.add(`${from} ${to}`);
    if (to === CLIENT_PIPELINE.length) wrong.push(`${arrow(i)}: a stage imports the wiring or a mode`);
    else if (to < from && !i.typeOnly) wrong.push(`${arrow(i)}: a value of an earlier stage (${CLIENT_PIPELINE[to]} comes before ${CLIENT_PIPELINE[from]})`);
  }
  for (const pair of pairs) {
    const [a, b] = pair.split(' ').map(Number) as [number, number];
    if (a < b && pairs.has(`${b} ${a}`)) wrong.push(`${CLIENT_PIPELINE[a]} and ${CLIENT_PIPELINE[b]} import each other`);
  }
  assert.equal(wrong, []);
});

// Issue 32's limits: one concept per file; the seat's own parts (server/seat/), split into rooms, take a lower limit.
test('no file of src/ passes 250 lines, none of src/server/seat/ passes 200', () => {
  const seat = join(SRC, 'server', 'seat');
  const over = files.flatMap((f) => {
    const limit = f.startsWith(seat + '/') ? 200 : 250;
    const lines = lineCount(f);
    return lines > limit ? [`${shown(f)}: ${lines} lines (limit ${limit})`] : [];
  });
  assert.equal(over, []);
});

test('src/module/ imports nothing of src/ but src/shared/ and itself', () => {
  assert.equal(
    crossings(
      ['module'],
      [...new Set(files.map(partOf))].filter((p) => p !== 'module' && p !== 'shared'),
    ),
    [],
  );
});

test('one file alone reaches the private parts of nats.js', () => {
  const PRIVATE = /getConsumerOpts|\bcursor\.|consumer\.api\b|\.options\?\.inboxPrefix|as unknown as \{ (options|reset|consumer)/;
  const touching = files.filter((f) => PRIVATE.test(readFileSync(f, 'utf8'))).map(shown);
  assert.equal(touching, ['src/shared/bus/watch/internals.ts']);
});

test.run();
