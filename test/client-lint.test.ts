// `lint` (issue 14): a module's templates judged without a bus or an engine, by the client's own
// scanner, refusals and unpacker — so lint errs exactly where the fill would refuse — and the
// bundle's output and exit codes on an archive, a directory and a single file.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { packTar } from 'modern-tar';
import { DEFAULT_ARCHIVE_LIMITS } from '../src/module/archive-limits.ts';
import { unpackArchive } from '../src/module/untar.ts';
import { fillModule, prepareTemplates } from '../src/client/fill/fill.ts';
import { lintTemplates, type LintProblem } from '../src/module/judge.ts';
import type { LintJson } from '../src/client/commands/lint/command.ts';
import { readLintInput } from '../src/module/input.ts';
import { planOfComposition } from '../src/module/composition-plan.ts';
import { firstInvalidUtf8 } from '../src/module/utf8.ts';
import type { Plan } from '../src/shared/contract/plan.ts';
import { packTemplates } from './helpers/archive.ts';
import { cleanupBundles, copyBundleAlone, ensureBuilt, runBundle } from './helpers/bundle.ts';
import { tempDir as newTempDir } from './helpers/temp.ts';

const dirs: string[] = [];
test.after(() => {
  cleanupBundles();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = newTempDir('mesh-lint-');
  dirs.push(dir);
  return dir;
}

const enc = new TextEncoder();
const files = (record: Record<string, string | Uint8Array>) => new Map(Object.entries(record).map(([k, v]) => [k, typeof v === 'string' ? enc.encode(v) : v]));

function plan(over: Partial<Plan> = {}): Plan {
  return {
    node: 'n1',
    module: 'web',
    build: '1',
    archive: { ref: 'obj://a/web.tar', digest: `sha256:${'0'.repeat(64)}` },
    files: [],
    placement: { port: { http: 8080 } },
    secrets: [],
    provisions: [],
    provides: [],
    items: [],
    collections: [],
    ...over,
  };
}

function unwrap<T>(parsed: { ok: true; value: T } | { ok: false; reason: string }): T {
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.value;
}

const errors = (problems: LintProblem[]) => problems.filter((p) => p.severity === 'error');
const at = (p: LintProblem) => `${p.template}:${p.line}: ${p.message}`;

test('every placeholder is listed with its line and column; an escape is an info line, never a placeholder', () => {
  const report = lintTemplates(files({ 'a.conf': 'x ${port:http}\n\ny=$${config:kept} ${config:db.host}\n' }));
  assert.equal(report.templates, [
    {
      name: 'a.conf',
      use: 'file',
      placeholders: [
        { line: 1, column: 3, kind: 'port', name: 'http' },
        { line: 3, column: 19, kind: 'config', name: 'db.host' },
      ],
    },
  ]);
  assert.equal(report.problems, [{ severity: 'info', template: 'a.conf', line: 3, message: '$${ is an escape: it comes out as the text ${' }]);
});

test('an unknown kind is an error with the fill’s own words and the escape that keeps it as text', () => {
  const report = lintTemplates(files({ 'a.sh': 'echo ${line:0:1}\n' }));
  assert.equal(errors(report.problems).map(at), ['a.sh:1: ${line:0:1}: unknown kind "line" (write $${line:0:1} to keep it as text)']);
});

test('an unknown kind near a known one says which it was meant as, before the escape that keeps it as text', () => {
  const report = lintTemplates(files({ 'a.conf': 'port=${confg:port}\nk=${secert:api-key}\n' }));
  assert.equal(errors(report.problems).map(at), [
    'a.conf:1: ${confg:port}: unknown kind "confg": did you mean "config"? (write $${confg:port} to keep it as text)',
    'a.conf:2: ${secert:api-key}: unknown kind "secert": did you mean "secret"? (write $${secert:api-key} to keep it as text)',
  ]);
});

test('an unclosed ${kind:name is an error saying the fill writes it as text; the fill itself keeps it byte for byte', () => {
  const text = 'a=${config:name\nb=${port:http ${config:x}\nc=$${config:kept\nd=${config:e$f}\n';
  const report = lintTemplates(files({ 'a.conf': text }));
  assert.equal(errors(report.problems).map(at), [
    'a.conf:1: ${config:name is not closed: the fill would write it as text (close it with }, or write $${config:name to keep it as text)',
    'a.conf:2: ${port:http is not closed: the fill would write it as text (close it with }, or write $${port:http to keep it as text)',
    'a.conf:4: ${config:e is not closed: the fill would write it as text (close it with }, or write $${config:e to keep it as text)',
  ]);
  const p = plan({ files: [{ path: '/etc/a', template: 'a.conf', mode: 'owned', change: 'none' }] });
  const fill = fillModule(p, unwrap(prepareTemplates(files({ 'a.conf': text }))), {
    lookup: (_plan, w) => ({ state: 'value', text: 'X', dependency: w.kind }),
  });
  assert.equal(fill.ok && fill.value.files[0]!.content, 'a=${config:name\nb=${port:http X\nc=${config:kept\nd=${config:e$f}\n');
  // In a template the plan does not use, it fails nothing: a warning.
  const unused = lintTemplates(files({ 'a.conf': 'x\n', 'spare.conf': '${config:open\n' }), p).problems.filter((x) => x.severity === 'warning');
  assert.equal(unused.map(at), [
    'spare.conf:1: ${config:open is not closed: the fill would write it as text (close it with }, or write $${config:open to keep it as text) (the plan does not use this template)',
  ]);
});

test('shell text is never taken for an unclosed placeholder: ${name:-x}, ${s: -1}, ${HOME, ${#a[@]}, $${ and a lone $', () => {
  const shell = 'a=${name:-x} ${str:?unset} ${s: -1} ${v:=x} ${len:+set}\nb=${HOME c=${#args[@]} d=$${config:doc e=$ f=${config:}\n';
  assert.equal(errors(lintTemplates(files({ 'run.sh': shell })).problems), []);
});

test('lint errs on exactly the placeholders the fill refuses, in the fill’s words (one source of truth)', () => {
  const piece = fc.oneof(
    fc.constantFrom('text ', '\n', '$', '$${', '${HOME}', '${x:-d}', '${config:open '),
    fc
      .tuple(fc.constantFrom('config', 'secret', 'line', 'k8s-thing', 'port'), fc.constantFrom('a', 'api-key', 'b.c', 'x'.repeat(300)))
      .map(([k, n]) => `\${${k}:${n}}`),
  );
  const template = fc.array(piece, { maxLength: 12 }).map((parts) => parts.join(''));
  fc.assert(
    fc.property(template, template, fc.boolean(), (one, two, asItem) => {
      const p = plan({
        files: [{ path: '/etc/one', template: 'one', mode: 'owned', change: 'none' }],
        secrets: [{ name: 'api-key', vault: 'module/web/api-key' }],
        placement: { port: { a: 1, 'api-key': 2, 'b.c': 3, ['x'.repeat(300)]: 4 } },
        items: asItem ? [{ collection: 'c', template: 'two' }] : [],
      });
      const archive = files({ one, two });
      const prepared = prepareTemplates(archive);
      if (!prepared.ok) return;
      const fill = fillModule(p, prepared.value, { lookup: (_plan, w) => ({ state: 'value', text: 'v', dependency: `${w.kind}:web:${w.name}` }) });
      // An unclosed placeholder is lint's alone: the fill writes it as text.
      const linted = errors(lintTemplates(archive, p).problems)
        .filter((e) => !/ is not closed: /.test(e.message))
        .map((e) => `template ${e.template} line ${e.line}: ${e.message}`);
      if (fill.ok) assert.equal(linted, []);
      else if (linted.length <= 20) assert.is(linted.sort().join('; '), fill.reason.split('; ').sort().join('; '));
    }),
    { numRuns: 300 },
  );
});

test('secrets: without a plan each is a note; with one, a secret it does not name and a secret or consumers in an item are errors', () => {
  const archive = files({ 'web.conf': 'k=${secret:api-key}\nj=${secret:other}\n', 'web.zsh': 'K=${secret:api-key} C=${consumers:db}\n' });
  const bare = lintTemplates(archive);
  assert.equal(errors(bare.problems), []);
  assert.equal(bare.problems.filter((p) => /the plan must name secret/.test(p.message)).length, 3);
  const withPlan = lintTemplates(
    archive,
    plan({
      files: [{ path: '/etc/web.conf', template: 'web.conf', mode: 'owned', change: 'none' }],
      secrets: [{ name: 'api-key', vault: 'module/web/api-key' }],
      provides: [{ provision: 'db' }],
      items: [{ collection: 'shell:zsh:normal', template: 'web.zsh' }],
    }),
  );
  assert.equal(errors(withPlan.problems).map(at), [
    'web.conf:2: ${secret:other}: secret "other" is not named by the plan',
    'web.zsh:1: ${secret:api-key}: an item names a secret, but an item is kept in a bucket and no secret is',
    "web.zsh:1: ${consumers:db}: an item names consumers' credentials, but an item is kept in a bucket and no credential is",
  ]);
});

test('with a plan: a missing template, an undeclared collection, an unknown binding, a provision not provided are errors; a missing placement a warning', () => {
  const report = lintTemplates(
    files({ 'a.conf': 'p=${port:admin}\nc=${collected:env}\nb=${bound:db:user}\nx=${consumers:pg}\n', 'spare.conf': '${nope:x}\n' }),
    plan({
      files: [
        { path: '/etc/a', template: 'a.conf', mode: 'owned', change: 'none' },
        { path: '/etc/b', template: 'gone.conf', mode: 'owned', change: 'none' },
      ],
    }),
  );
  assert.equal(
    errors(report.problems).map((p) => p.message),
    [
      '${collected:env}: collection "env" is not in the plan\'s collections',
      '${bound:db:user}: the plan has no provision matching "db:user" (wanted <provision>[.<local>]:<key>)',
      '${consumers:pg}: the plan does not provide "pg"',
      'template gone.conf (for /etc/b) is not in the archive',
    ],
  );
  const warnings = report.problems.filter((p) => p.severity === 'warning').map(at);
  assert.ok(warnings.includes('a.conf:1: ${port:admin}: the plan\'s placement has no port "admin": the file would wait for it'), warnings.join('\n'));
  // A template the plan does not use fails nothing: its unknown kind is a warning.
  assert.ok(
    warnings.some((w) => w.startsWith('spare.conf:1: ${nope:x}: unknown kind')),
    warnings.join('\n'),
  );
});

test('a file that is not UTF-8 is an error giving the offset of its first bad byte; a name past 255 bytes is an error', () => {
  const report = lintTemplates(files({ 'bad.bin': new Uint8Array([0x61, 0x0a, 0xc3, 0xa9, 0xed, 0xa0, 0x80]), 'long.conf': `\${config:${'n'.repeat(256)}}` }));
  assert.equal(
    errors(report.problems).map((p) => p.message),
    [
      'template bad.bin is not UTF-8 (first invalid byte at offset 4)',
      `\${config:${'n'.repeat(60)}…(256 bytes)}: its name is 256 bytes, past the limit of 255`,
    ],
  );
});

test('firstInvalidUtf8 agrees with the fatal decoder, and the bytes before the offset decode', () => {
  const strict = new TextDecoder('utf-8', { fatal: true });
  const valid = (b: Uint8Array) => {
    try {
      strict.decode(b);
      return true;
    } catch {
      return false;
    }
  };
  // Sequences at UTF-8's edges: overlong leads, surrogates (ED A0), past U+10FFFF (F4 90), cut short, stray continuations.
  const lead = fc.constantFrom(0x61, 0x80, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xed, 0xef, 0xf0, 0xf3, 0xf4, 0xf5, 0xff);
  const continuation = fc.constantFrom(0x61, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf);
  const edges = fc
    .array(
      fc.tuple(lead, fc.array(continuation, { maxLength: 3 })).map(([l, c]) => [l, ...c]),
      { maxLength: 4 },
    )
    .map((chars) => new Uint8Array(chars.flat()));
  const bytes = fc.oneof(
    fc.uint8Array({ maxLength: 24 }),
    edges,
    fc.string({ unit: 'binary' }).map((s) => enc.encode(s)),
    fc.tuple(fc.string(), fc.uint8Array({ maxLength: 3 }), fc.string()).map(([a, b, c]) => new Uint8Array([...enc.encode(a), ...b, ...enc.encode(c)])),
  );
  fc.assert(
    fc.property(bytes, (b) => {
      const offset = firstInvalidUtf8(b);
      assert.is(offset === undefined, valid(b));
      if (offset !== undefined) assert.ok(valid(b.subarray(0, offset)));
    }),
    { numRuns: 2000 },
  );
});

test('a directory is judged as its archive would be unpacked: a link or too many entries refused in the unpacker’s words', async () => {
  const dir = tempDir();
  mkdirSync(join(dir, 'conf'));
  writeFileSync(join(dir, 'conf', 'a.conf'), 'a');
  symlinkSync('/etc/passwd', join(dir, 'link'));
  const read = await readLintInput(dir);
  assert.ok(read.ok && read.value.refused);
  const tar = await packTar([
    { header: { name: 'conf/', type: 'directory', size: 0 } },
    { header: { name: 'conf/a.conf', size: 1 }, body: 'a' },
    { header: { name: 'link', type: 'symlink', size: 0, linkname: '/etc/passwd' } },
  ]);
  const unpacked = await unpackArchive(tar, DEFAULT_ARCHIVE_LIMITS);
  assert.ok(!unpacked.ok);
  assert.is(read.ok && read.value.refused, unpacked.ok ? '' : unpacked.reason);
  const limits = { ...DEFAULT_ARCHIVE_LIMITS, maxEntries: 1 };
  const few = await readLintInput(join(dir, 'conf'), limits);
  assert.ok(few.ok && few.value.refused === undefined && few.value.files.has('a.conf'));
  const many = await readLintInput(dir, limits);
  assert.is(many.ok && many.value.refused, 'entry "conf/a.conf": more than 1 entries, past the entry count limit');
});

test('the bundle: lint of an archive prints placeholders then problems, exits 1 on an error, 0 on notes alone, 2 when it cannot read', async () => {
  ensureBuilt('client');
  const bundle = copyBundleAlone('client');
  const dir = tempDir();
  writeFileSync(join(dir, 'bad.tar.gz'), gzipSync(await packTemplates({ 'web.conf': 'listen ${port:http}\nkey ${secret:api-key}\nx=${line:0:1}\n' })));
  writeFileSync(join(dir, 'good.tar'), await packTemplates({ 'web.conf': 'listen ${port:http}\n# $${config:x}\n' }));
  writeFileSync(join(dir, 'one.conf'), 'v=${config:v}\n');
  const bad = await runBundle('node', bundle, 'client', ['lint', join(dir, 'bad.tar.gz')]);
  assert.is(bad.code, 1, bad.stderr);
  assert.equal(bad.stdout.trim().split('\n'), [
    'web.conf:1 ${port:http}',
    'web.conf:2 ${secret:api-key}',
    'web.conf:3 ${line:0:1}',
    'error: web.conf:3: ${line:0:1}: unknown kind "line" (write $${line:0:1} to keep it as text)',
    'info: web.conf:2: ${secret:api-key}: the plan must name secret "api-key" (give --plan to check)',
    '1 template(s), 3 placeholder(s): 1 error(s), 0 warning(s), 1 note(s)',
  ]);
  const good = await runBundle('node', bundle, 'client', ['lint', join(dir, 'good.tar'), '--json']);
  assert.is(good.code, 0, good.stderr);
  const json = JSON.parse(good.stdout) as LintJson;
  assert.equal([json.kind, json.ok, json.errors, json.problems.map((p) => p.severity)], ['archive', true, 0, ['info']]);
  const one = await runBundle('node', bundle, 'client', ['lint', join(dir, 'one.conf')]);
  assert.equal([one.code, one.stdout.split('\n')[0]], [0, 'one.conf:1 ${config:v}']);
  const missing = await runBundle('node', bundle, 'client', ['lint', join(dir, 'nothing.tar')]);
  assert.is(missing.code, 2);
  assert.match(missing.stderr, /^node-provisioner: cannot read .*nothing\.tar/);
});

test('the bundle: --plan is validated as a plan; one that does not validate is an error naming the field', async () => {
  ensureBuilt('client');
  const bundle = copyBundleAlone('client');
  const dir = tempDir();
  writeFileSync(join(dir, 'web.tar'), await packTemplates({ 'web.conf': 'k=${secret:api-key}\n' }));
  writeFileSync(
    join(dir, 'plan.json'),
    JSON.stringify({
      ...plan({
        files: [{ path: '/etc/web.conf', template: 'web.conf', mode: 'owned', change: 'none' }],
        secrets: [{ name: 'api-key', vault: 'module/web/api-key' }],
      }),
    }),
  );
  writeFileSync(join(dir, 'bad-plan.json'), JSON.stringify({ ...plan(), files: [{ path: 'relative', template: 'web.conf' }] }));
  const ok = await runBundle('node', bundle, 'client', ['lint', join(dir, 'web.tar'), '--plan', join(dir, 'plan.json')]);
  assert.is(ok.code, 0, ok.stdout);
  assert.match(ok.stdout, /warning: the plan's archive digest sha256:0+ is not this archive's/);
  const bad = await runBundle('node', bundle, 'client', ['lint', join(dir, 'web.tar'), '--plan', join(dir, 'bad-plan.json')]);
  assert.is(bad.code, 1);
  assert.match(bad.stdout, /error: plan .*bad-plan\.json: field "files\.0\.path" is not absolute/);
});

test('the bundle: --plan takes a composition too (told by having no "node"): its fields strictly, its secrets and templates, no placement judged', async () => {
  ensureBuilt('client');
  const bundle = copyBundleAlone('client');
  const dir = tempDir();
  writeFileSync(join(dir, 'web.tar'), await packTemplates({ 'web.conf': 'listen ${port:http}\nk=${secret:api-key}\n' }));
  const composition = (files: unknown[], secrets: unknown[]) => JSON.stringify({ module: 'web', build: '7', provisioning: { files, secrets } });
  const file = { path: '/etc/web.conf', template: 'web.conf', mode: 'seed' };
  writeFileSync(join(dir, 'good.json'), composition([file], [{ name: 'api-key' }]));
  writeFileSync(join(dir, 'typo.json'), composition([{ path: '/etc/web.conf', template: 'web.conf', mdoe: 'seed' }], [{ name: 'api-key' }]));
  writeFileSync(join(dir, 'unnamed.json'), composition([file, { path: '/etc/other', template: 'other.conf' }], []));
  const good = await runBundle('node', bundle, 'client', ['lint', join(dir, 'web.tar'), '--plan', join(dir, 'good.json'), '--json']);
  assert.is(good.code, 0, good.stdout);
  const json = JSON.parse(good.stdout) as LintJson;
  assert.equal([json.against, json.errors, json.warnings], ['composition', 0, 0]);
  const typo = await runBundle('node', bundle, 'client', ['lint', join(dir, 'web.tar'), '--plan', join(dir, 'typo.json')]);
  assert.is(typo.code, 1, typo.stdout);
  assert.match(typo.stdout, /error: composition .*typo\.json: field "provisioning\.files\.0\.mdoe" is an unknown field; did you mean "mode"\?/);
  const unnamed = await runBundle('node', bundle, 'client', ['lint', join(dir, 'web.tar'), '--plan', join(dir, 'unnamed.json')]);
  assert.is(unnamed.code, 1, unnamed.stdout);
  assert.match(unnamed.stdout, /error: web\.conf:2: \$\{secret:api-key\}: secret "api-key" is not named by the plan/);
  assert.match(unnamed.stdout, /error: .*other\.conf/);
  // A path that resolves to a `..` segment whatever the placement: an error before any node has it (issue 31 item 10).
  writeFileSync(join(dir, 'climbs.json'), composition([{ ...file, path: '${dir:config}/../../etc/passwd' }], [{ name: 'api-key' }]));
  const climbs = await runBundle('node', bundle, 'client', ['lint', join(dir, 'web.tar'), '--plan', join(dir, 'climbs.json')]);
  assert.is(climbs.code, 1, climbs.stdout);
  assert.match(climbs.stdout, /error: .*file web\.conf: path "\$\{dir:config\}\/\.\.\/\.\.\/etc\/passwd" holds a "\.\." segment whatever the placement/);
});

test('a path template with a . or .. segment of text alone is refused whatever the placement; one a placeholder touches depends on its value', () => {
  const problemsOf = (path: string) =>
    planOfComposition({
      module: 'web',
      build: '1',
      provisioning: { files: [{ path, template: 't', mode: 'owned', change: 'none' }], secrets: [], provisions: [], provides: [], items: [], collections: [] },
    }).problems;
  for (const path of ['${dir:config}/../../etc/passwd', '/srv/..', '/srv/./x', '${dir:a}/..', '/a/${port:p}/../b', '/a/$${x}/../b'])
    assert.is(problemsOf(path).length, 1, path);
  for (const path of ['${dir:config}/web.conf', '/srv/..${dir:a}', '${dir:a}..', '/srv/.${access:x}/y', '/srv/...', '/srv/.hidden'])
    assert.equal(problemsOf(path), [], path);
});

test.run();
