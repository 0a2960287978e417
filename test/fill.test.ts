// Filling one module from the values at hand (DESIGN §7 points 2, 4, 5; §8), as pure data.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FillMemo, fillModule, prepareTemplates } from '../src/client/fill/fill.ts';
import { Sources, type ValueLookup } from '../src/client/sources/index.ts';
import { placementSource } from '../src/client/sources/placement.ts';
import type { Plan } from '../src/shared/contract/plan.ts';

const enc = new TextEncoder();

function templates(files: Record<string, string>) {
  const prepared = prepareTemplates(new Map(Object.entries(files).map(([k, v]) => [k, enc.encode(v)])));
  if (!prepared.ok) throw new Error(prepared.reason);
  return prepared.value;
}

function plan(files: Plan['files'], secrets: Plan['secrets'] = []): Plan {
  return {
    node: 'n1',
    module: 'web',
    build: '1',
    archive: { ref: 'obj://b/x.tar', digest: 'sha256:' + 'a'.repeat(64) },
    files,
    placement: { dir: { config: '/etc/web' }, port: { http: 8080 } },
    secrets,
    provisions: [],
    provides: [],
    items: [],
    collections: [],
  };
}

/** The sources as a node has them, config served from `values`. */
const config = (values: Record<string, string>): ValueLookup =>
  new Sources([
    placementSource(),
    {
      name: 'config',
      lookup: (plan, wanted) => ({
        ...(Object.hasOwn(values, wanted.name) ? ({ state: 'value', text: values[wanted.name]! } as const) : ({ state: 'waiting' } as const)),
        dependency: `config:${plan.module}:${wanted.name}`,
      }),
    },
  ]);

test('placement and config are filled, secrets stay placeholders, foreign text is kept', () => {
  const out = fillModule(
    plan([{ path: '/etc/web/web.conf', template: 't', mode: 'owned', change: 'restart' }], [{ name: 'k', vault: 'module/web/k' }]),
    templates({ t: 'port ${port:http} dir ${dir:config} host ${config:h} key ${secret:k} ${HOME}\n' }),
    config({ h: 'db' }),
  );
  assert.ok(out.ok);
  if (!out.ok) return;
  assert.equal(out.value.files[0]!.content, ['port 8080 dir /etc/web host db key ', { secret: 'k' }, ' ${HOME}\n']);
  assert.equal(out.value.waiting, []);
  assert.ok(out.value.needs.every((n) => n.met));
  assert.equal(
    out.value.needs.map((n) => `${n.kind}:${n.name}`),
    ['port:http', 'dir:config', 'config:h', 'secret:k'],
  );
});

test('a literal ${secret: from a template escape or a value reaches the engine as text, never as a secret part', () => {
  const out = fillModule(
    plan([{ path: '/f', template: 't', mode: 'owned', change: 'none' }], [{ name: 'k', vault: 'v' }]),
    templates({ t: 'a $${secret:k} b ${config:x} c ${secret:k}\n' }),
    config({ x: 'evil ${secret:k}' }),
  );
  assert.ok(out.ok);
  if (out.ok) assert.equal(out.value.files[0]!.content, ['a ${secret:k} b evil ${secret:k} c ', { secret: 'k' }, '\n']);
});

test('a file with a value that waits is not filled; the others are, and the wait names the value and file', () => {
  const out = fillModule(
    plan([
      { path: '/a', template: 'a', mode: 'owned', change: 'none' },
      { path: '/b', template: 'b', mode: 'owned', change: 'none' },
    ]),
    templates({ a: '${config:there}', b: '${config:missing} ${config:missing}' }),
    config({ there: '1' }),
  );
  assert.ok(out.ok);
  if (!out.ok) return;
  assert.equal(
    out.value.files.map((f) => f.path),
    ['/a'],
  );
  assert.equal(out.value.waiting, [{ kind: 'config', name: 'missing', files: ['/b'] }]);
  assert.equal(
    out.value.needs.find((n) => n.name === 'missing'),
    { kind: 'config', name: 'missing', files: ['/b'], met: false },
  );
});

test('a secret with a path is handed as that file alone, holding only its placeholder, mode 0600', () => {
  const out = fillModule(
    plan([{ path: '/a', template: 'a', mode: 'owned', change: 'reload' }], [{ name: 'tls', vault: 'module/web/tls', path: '/etc/web/tls.key' }]),
    templates({ a: 'x' }),
    config({}),
  );
  assert.ok(out.ok);
  if (!out.ok) return;
  const f = out.value.files.find((x) => x.path === '/etc/web/tls.key')!;
  assert.equal(f.content, [{ secret: 'tls' }]);
  assert.is(f.fileMode, '0600');
  assert.is(f.change, 'reload');
});

test('an unknown kind, an unnamed secret, a failing value and a missing template each fail with the reason', () => {
  const p = plan([{ path: '/a', template: 'a', mode: 'owned', change: 'none' }]);
  const fail = (text: string, resolve: ValueLookup = config({})) => {
    const out = fillModule(p, templates({ a: text }), resolve);
    return out.ok ? 'ok' : out.reason;
  };
  assert.is(fail('x\n${nope:y}'), 'template a line 2: ${nope:y}: unknown kind "nope" (write $${nope:y} to keep it as text)');
  assert.is(fail('${secret:y}'), 'template a line 1: ${secret:y}: secret "y" is not named by the plan');
  assert.is(
    fail('${config:y}', { lookup: () => ({ state: 'failed', reason: 'bad bytes', dependency: 'config:web:y' }) }),
    'template a line 1: ${config:y}: bad bytes',
  );
  const missing = fillModule(p, templates({ b: '' }), config({}));
  assert.is(missing.ok ? 'ok' : missing.reason, 'template a (for /a) is not in the archive');
});

test('a fill returns the dependency key of every value it read, each once and no secret; a failed fill, those read up to the value that failed it', () => {
  const p = plan(
    [
      { path: '/a', template: 'a', mode: 'owned', change: 'none' },
      { path: '/b', template: 'b', mode: 'owned', change: 'none' },
    ],
    [{ name: 'k', vault: 'v' }],
  );
  const asked: string[] = [];
  const sources = config({ x: '1' });
  const counting: ValueLookup = { lookup: (on, wanted) => (asked.push(`${wanted.kind}:${wanted.name}`), sources.lookup(on, wanted)) };
  const out = fillModule(p, templates({ a: '${config:x} ${dir:config} ${secret:k} ${config:x}', b: '${config:later}' }), counting);
  assert.ok(out.ok);
  assert.equal(out.dependencies, ['config:web:x', 'placement:web:dir:config', 'config:web:later']);
  assert.equal(asked, ['config:x', 'dir:config', 'config:x', 'config:later'], 'each placeholder looked up once, a secret never');
  const failing: ValueLookup = {
    lookup: (on, wanted) => (wanted.name === 'bad' ? { state: 'failed', reason: 'not UTF-8', dependency: 'config:web:bad' } : sources.lookup(on, wanted)),
  };
  const failed = fillModule(p, templates({ a: '${config:x} ${config:bad} ${config:after}', b: '' }), failing);
  assert.equal(failed, { ok: false, reason: 'template a line 1: ${config:bad}: not UTF-8', dependencies: ['config:web:x', 'config:web:bad'] });
});

test('a template that is not UTF-8 is refused with its name', () => {
  const out = prepareTemplates(new Map([['bin', new Uint8Array([0xc3, 0x28])]]));
  assert.equal(out, { ok: false, reason: 'template bin is not UTF-8' });
});

test('a placement value shaped like a secret, a lone surrogate or a trailing `$` stays text beside the real secret parts', () => {
  const p = { ...plan([{ path: '/f', template: 't', mode: 'owned', change: 'none' }], [{ name: 'api-key', vault: 'module/web/api-key' }]) };
  p.placement = { dir: { x: '\uD800api-key\uD800', lone: '\uD800', dollar: 'abc$' } };
  const out = fillModule(p, templates({ t: 'V=${dir:x}|L=${dir:lone}${secret:api-key}|D=${dir:dollar}${secret:api-key}\n' }), config({}));
  assert.ok(out.ok);
  if (!out.ok) return;
  assert.equal(out.value.files[0]!.content, ['V=\uD800api-key\uD800|L=\uD800', { secret: 'api-key' }, '|D=abc$', { secret: 'api-key' }, '\n']);
  const plain = fillModule(p, templates({ t: 'V=${dir:x}|' }), config({}));
  assert.ok(plain.ok && plain.value.files[0]!.content === 'V=\uD800api-key\uD800|', 'no secret part without a secret placeholder');
});

test('every placeholder no value can fill is listed at once, each unknown kind with the escape that keeps it as text', () => {
  const p = plan([
    { path: '/a', template: 'a', mode: 'owned', change: 'none' },
    { path: '/b', template: 'b', mode: 'owned', change: 'none' },
  ]);
  const out = fillModule(p, templates({ a: 'c=${line:0:1}\n${config:ok}\n${sys:os.name}', b: '${aws:username} ${secret:nope}' }), config({ ok: '1' }));
  assert.equal(out, {
    ok: false,
    dependencies: [],
    reason:
      'template a line 1: ${line:0:1}: unknown kind "line" (write $${line:0:1} to keep it as text); ' +
      'template a line 3: ${sys:os.name}: unknown kind "sys" (write $${sys:os.name} to keep it as text); ' +
      'template b line 1: ${aws:username}: unknown kind "aws" (write $${aws:username} to keep it as text); ' +
      'template b line 1: ${secret:nope}: secret "nope" is not named by the plan',
  });
});

test('a placeholder name too long for a key fails the module with the limit, never building the key', () => {
  const p = plan([{ path: '/a', template: 'a', mode: 'owned', change: 'none' }]);
  const out = fillModule(p, templates({ a: 'x ${config:' + 'n'.repeat(5000) + '}' }), config({}));
  assert.not.ok(out.ok);
  if (!out.ok) assert.match(out.reason, /^template a line 1: \$\{config:n{60}…\(5000 bytes\)\}: its name is 5000 bytes, past the limit of 255$/);
});

test('a leading byte-order mark of a template is kept, and a template past 16 MiB is refused with its size', () => {
  const bom = prepareTemplates(new Map([['t', new Uint8Array([0xef, 0xbb, 0xbf, 0x78])]]));
  assert.ok(bom.ok);
  if (bom.ok)
    assert.is(
      bom.value.get('t')!.runs[0]!.render(() => ''),
      '\uFEFFx',
    );
  const big = prepareTemplates(new Map([['big', new Uint8Array(16 * 1024 * 1024 + 1)]]));
  assert.equal(big, { ok: false, reason: 'template big is 16777217 bytes, past the limit of 16777216 bytes' });
});

test('items are filled like files and handed out only when nothing of the module waits', () => {
  const p = { ...plan([{ path: '/a', template: 'a', mode: 'owned', change: 'none' }]), items: [{ collection: 'shell:zsh:normal', template: 'i' }] };
  const ready = fillModule(p, templates({ a: 'a', i: 'alias x=${config:x} dir=${dir:config}' }), config({ x: 'y' }));
  assert.ok(ready.ok);
  if (ready.ok) assert.equal(ready.value.items, [{ collection: 'shell:zsh:normal', content: 'alias x=y dir=/etc/web' }]);
  const waits = fillModule(p, templates({ a: '${config:later}', i: 'alias' }), config({}));
  assert.ok(waits.ok);
  if (waits.ok) assert.equal(waits.value.items, [], 'a file waits: no item is recorded');
  const itemWaits = fillModule(p, templates({ a: 'a', i: '${config:later}' }), config({}));
  assert.ok(itemWaits.ok);
  if (itemWaits.ok) assert.equal(itemWaits.value.waiting, [{ kind: 'config', name: 'later', files: ['item shell:zsh:normal'] }]);
});

test('an item naming a secret, or two items for one collection, fail the module with the reason', () => {
  const p = { ...plan([], [{ name: 'k', vault: 'v' }]), items: [{ collection: 'c', template: 'i' }] };
  const secret = fillModule(p, templates({ i: 'x ${secret:k}' }), config({}));
  assert.equal(secret, {
    ok: false,
    reason: 'template i line 1: ${secret:k}: an item names a secret, but an item is kept in a bucket and no secret is',
    dependencies: [],
  });
  const twice = fillModule(
    {
      ...p,
      items: [
        { collection: 'c', template: 'i' },
        { collection: 'c', template: 'i' },
      ],
    },
    templates({ i: 'x' }),
    config({}),
  );
  assert.equal(twice, { ok: false, reason: 'two items for collection "c": a module contributes one item to a collection', dependencies: [] });
});

test('a file whose values did not change is not rendered or hashed again; one whose value changed is', () => {
  const p = plan([
    { path: '/a', template: 'a', mode: 'owned', change: 'none' },
    { path: '/b', template: 'b', mode: 'owned', change: 'none' },
  ]);
  const t = templates({ a: 'a=${config:a}', b: 'b=${config:b}' });
  const memo = new FillMemo();
  const first = fillModule(p, t, config({ a: '1', b: '1' }), memo);
  const second = fillModule(p, t, config({ a: '2', b: '1' }), memo);
  assert.ok(first.ok && second.ok);
  if (!first.ok || !second.ok) return;
  assert.is(second.value.files[1], first.value.files[1], 'b reused as it was');
  assert.is.not(second.value.files[0], first.value.files[0]);
  assert.is(second.value.files[0]!.content, 'a=2');
  const replanned = fillModule({ ...p, files: p.files.map((f) => ({ ...f })) }, t, config({ a: '2', b: '1' }), memo);
  assert.ok(replanned.ok && replanned.value.files[1] !== first.value.files[1], 'a new plan renders again');
});

test.run();
