// Placeholders (DESIGN §8): a corpus of real-looking templates with exact bytes, then properties.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parsePlaceholders, renderPlaceholders, type Placeholder } from '../src/shared/contract/placeholders.ts';
import fc from 'fast-check';
import { SEED } from './helpers/random.ts';

/** A resolver from `kind:name` to value that fails the test on any placeholder it was not given. */
function resolveFrom(values: Record<string, string>): (p: Placeholder) => string {
  return (p) => {
    const value = values[`${p.kind}:${p.name}`];
    if (value === undefined) throw new Error(`unexpected placeholder ${p.kind}:${p.name}`);
    return value;
  };
}

/** A resolver that writes each placeholder back as its original text. */
const original = (p: Placeholder): string => '$' + `{${p.kind}:${p.name}}`;

test('a bash script keeps its shell expansions and fills only its placeholders', () => {
  const input =
    [
      '#!/usr/bin/env bash',
      'set -euo pipefail',
      '# Documented as $${config:db.host}, filled here as ${config:db.host}.',
      'DB_HOST="${config:db.host}"',
      'DB_PORT="${config:db.port}"',
      'LOG_DIR="${LOG_DIR:-${HOME}/logs}"',
      'args=("$@")',
      'echo "got ${#args[@]} args, first ${1}, pid $$, price $$5, home $${HOME}"',
      'for f in "${files[@]}"; do',
      '\tprintf \'%s\\t%s\\n\' "$f" "${config:db.host}"',
      'done',
      'echo "${name:-anonymous} ${str:?unset} ${len:+set} ${v:=x} ${s: -1}"',
      'echo cost $',
    ].join('\n') + '\n';
  const expected =
    [
      '#!/usr/bin/env bash',
      'set -euo pipefail',
      '# Documented as ${config:db.host}, filled here as db.internal.',
      'DB_HOST="db.internal"',
      'DB_PORT="5432"',
      'LOG_DIR="${LOG_DIR:-${HOME}/logs}"',
      'args=("$@")',
      'echo "got ${#args[@]} args, first ${1}, pid $$, price $$5, home ${HOME}"',
      'for f in "${files[@]}"; do',
      '\tprintf \'%s\\t%s\\n\' "$f" "db.internal"',
      'done',
      'echo "${name:-anonymous} ${str:?unset} ${len:+set} ${v:=x} ${s: -1}"',
      'echo cost $',
    ].join('\n') + '\n';
  const values = { 'config:db.host': 'db.internal', 'config:db.port': '5432' };
  assert.is(renderPlaceholders(input, resolveFrom(values)), expected);
  assert.equal(parsePlaceholders(input), [
    { kind: 'config', name: 'db.host', line: 3, column: 52 },
    { kind: 'config', name: 'db.host', line: 4, column: 10 },
    { kind: 'config', name: 'db.port', line: 5, column: 10 },
    { kind: 'config', name: 'db.host', line: 10, column: 26 },
  ]);
});

test('an nginx config keeps its $variables and ${request_uri}-like text', () => {
  const input =
    [
      'server {',
      '    listen 80;',
      '    root ${dir:config}/www;',
      '    location / {',
      '        return 301 https://$host${request_uri};',
      '    }',
      '    location /api/ {',
      '        proxy_pass http://127.0.0.1:${port:api}$request_uri;',
      '        proxy_set_header Host $host;',
      '    }',
      '    log_format main \'$remote_addr - ${remote_user} [$time_local] "$request"\';',
      '    include ${dir:config}/extra/*.conf;',
      '}',
    ].join('\n') + '\n';
  const expected =
    [
      'server {',
      '    listen 80;',
      '    root /etc/mesh/web/www;',
      '    location / {',
      '        return 301 https://$host${request_uri};',
      '    }',
      '    location /api/ {',
      '        proxy_pass http://127.0.0.1:8081$request_uri;',
      '        proxy_set_header Host $host;',
      '    }',
      '    log_format main \'$remote_addr - ${remote_user} [$time_local] "$request"\';',
      '    include /etc/mesh/web/extra/*.conf;',
      '}',
    ].join('\n') + '\n';
  const values = { 'dir:config': '/etc/mesh/web', 'port:api': '8081' };
  assert.is(renderPlaceholders(input, resolveFrom(values)), expected);
  assert.equal(parsePlaceholders(input), [
    { kind: 'dir', name: 'config', line: 3, column: 10 },
    { kind: 'port', name: 'api', line: 8, column: 37 },
    { kind: 'dir', name: 'config', line: 12, column: 13 },
  ]);
});

test('a systemd unit with CRLF line ends and tabs keeps every byte and counts CRLF as one line', () => {
  const input =
    '[Unit]\r\nDescription=Web on port ${port:http}\r\n\r\n[Service]\r\n' +
    'ExecStart=/usr/bin/web --port ${port:http}\t--home %h --data ${HOME}/data\r\n' +
    'Environment=PATH=${PATH}:%h/bin\r\nEnvironment="MODE=${MODE:-prod}"\r\n' +
    'WorkingDirectory=${dir:state}\r\n';
  const expected =
    '[Unit]\r\nDescription=Web on port 8080\r\n\r\n[Service]\r\n' +
    'ExecStart=/usr/bin/web --port 8080\t--home %h --data ${HOME}/data\r\n' +
    'Environment=PATH=${PATH}:%h/bin\r\nEnvironment="MODE=${MODE:-prod}"\r\n' +
    'WorkingDirectory=/var/lib/web\r\n';
  const values = { 'port:http': '8080', 'dir:state': '/var/lib/web' };
  assert.is(renderPlaceholders(input, resolveFrom(values)), expected);
  assert.equal(parsePlaceholders(input), [
    { kind: 'port', name: 'http', line: 2, column: 25 },
    { kind: 'port', name: 'http', line: 5, column: 31 },
    { kind: 'dir', name: 'state', line: 8, column: 18 },
  ]);
});

test('a JSON file keeps its literal braces and non-ASCII text and counts columns in code points', () => {
  const input = [
    '{',
    '  "api": { "key": "${secret:api-key}", "url": "https://api.example/${config:api.path}" },',
    '  "example": "$${secret:api-key}",',
    '  "braces": "{}{{}}${}}{",',
    '  "note": "naïve — ${ünï:code} 😀 ${config:ünïcode}",',
    '  "list": [${collected:shell:zsh:normal}]',
    '}',
  ].join('\n');
  const expected = [
    '{',
    '  "api": { "key": "s3cr3t", "url": "https://api.example/v2" },',
    '  "example": "${secret:api-key}",',
    '  "braces": "{}{{}}${}}{",',
    '  "note": "naïve — ${ünï:code} 😀 ok",',
    '  "list": ["a", "b"]',
    '}',
  ].join('\n');
  const values = {
    'secret:api-key': 's3cr3t',
    'config:api.path': 'v2',
    'config:ünïcode': 'ok',
    'collected:shell:zsh:normal': '"a", "b"',
  };
  assert.is(renderPlaceholders(input, resolveFrom(values)), expected);
  assert.equal(parsePlaceholders(input), [
    { kind: 'secret', name: 'api-key', line: 2, column: 20 },
    { kind: 'config', name: 'api.path', line: 2, column: 68 },
    { kind: 'config', name: 'ünïcode', line: 5, column: 34 },
    { kind: 'collected', name: 'shell:zsh:normal', line: 6, column: 12 },
  ]);
});

test('nested, unclosed, uppercase, spaced and empty ${…} text comes out byte for byte', () => {
  const input = [
    'nested ${a:${b}} and ${a:${b:c}} and ${a:$${b:c}}',
    'upper ${A:B} space ${ foo:bar} ${a: b} ${a:b c} ${a:b\tc}',
    'digits ${1} ${9a:b} ${a_b:c} ${a.b:c} ${-a:b} ${a-:b} ${a-1:b-2}',
    'empty ${} ${:} ${a:} ${:b} ${a}',
    'escapes $$ $$$ $$${a:b} $$$${a:b} $${ $${} a$',
    'closers } }} {} ${a:b}}',
    'unclosed ${x:y',
  ].join('\n');
  const expected = [
    'nested ${a:${b}} and ${a:BC} and ${a:${b:c}}',
    'upper ${A:B} space ${ foo:bar} ${a: b} ${a:b c} ${a:b\tc}',
    'digits ${1} ${9a:b} ${a_b:c} ${a.b:c} ${-a:b} X Y',
    'empty ${} ${:} ${a:} ${:b} ${a}',
    'escapes $$ $$$ $${a:b} $$${a:b} ${ ${} a$',
    'closers } }} {} AB}',
    'unclosed ${x:y',
  ].join('\n');
  const values = { 'b:c': 'BC', 'a-:b': 'X', 'a-1:b-2': 'Y', 'a:b': 'AB' };
  assert.is(renderPlaceholders(input, resolveFrom(values)), expected);
  assert.equal(parsePlaceholders(input), [
    { kind: 'b', name: 'c', line: 1, column: 26 },
    { kind: 'a-', name: 'b', line: 3, column: 47 },
    { kind: 'a-1', name: 'b-2', line: 3, column: 55 },
    { kind: 'a', name: 'b', line: 6, column: 17 },
  ]);
});

test('a name may hold colons and dots but never starts with a shell operator', () => {
  assert.equal(
    parsePlaceholders('${bound:db.admin:user}${a:x-}${a:-x}${a:=x}${a:+x}${a:?x}${a:x=y+z?}').map((p) => p.name),
    ['db.admin:user', 'x-', 'x=y+z?'],
  );
});

test('a lone carriage return does not start a line', () => {
  assert.equal(parsePlaceholders('a\rb ${k:n}\n\r${k:m}'), [
    { kind: 'k', name: 'n', line: 1, column: 5 },
    { kind: 'k', name: 'm', line: 2, column: 2 },
  ]);
});

test('a resolved value is inserted verbatim, never read as a placeholder or escape', () => {
  const value = '$${config:x} ${config:y} ${open} ${p0} $$ }';
  const out = renderPlaceholders('[${config:a}|${config:b}]', (p) => (p.name === 'a' ? value : '${p1}'));
  assert.is(out, `[${value}|\${p1}]`);
});

test('the resolver is called once per placeholder, in order, duplicates included', () => {
  const seen: string[] = [];
  const out = renderPlaceholders('${k:a} ${k:b} ${k:a}\n  ${j:a}', (p) => {
    seen.push(`${p.kind}:${p.name}@${p.line}:${p.column}`);
    return String(seen.length);
  });
  assert.is(out, '1 2 3\n  4');
  assert.equal(seen, ['k:a@1:1', 'k:b@1:8', 'k:a@1:15', 'j:a@2:3']);
});

test('an error thrown by the resolver propagates out of renderPlaceholders', () => {
  const boom = new Error('no value for config:db.host');
  try {
    renderPlaceholders('x ${config:db.host} y', () => {
      throw boom;
    });
    assert.unreachable('renderPlaceholders returned');
  } catch (error) {
    assert.is(error, boom);
  }
});

test('a text without placeholders never calls the resolver and comes back unchanged', () => {
  for (const text of ['', '$', '$$', '}', '{', '${', '${}', 'plain\r\n\ttext é 😀', '${HOME}']) {
    assert.is(
      renderPlaceholders(text, () => assert.unreachable('resolver called') as never),
      text,
    );
    assert.equal(parsePlaceholders(text), []);
  }
});

// Properties over random texts (fast-check, seeded by MESH_TEST_SEED, MESH_FUZZ_RUNS cases each), so
// any failure replays and shrinks to a short text.
const RUNS = Number(process.env['MESH_FUZZ_RUNS'] ?? 5000);

// Heavy in `$ { } :`, kind letters and digits, with whole fragments so placeholders, escapes and
// near-misses are common rather than one in a million; up to 39 pieces, any length as likely (size
// 'max': fast-check's default keeps arrays short, and the texts would hold few placeholders).
const PIECES = [
  '$',
  '$',
  '$',
  '{',
  '{',
  '}',
  '}',
  ':',
  ':',
  'a',
  'b',
  'z',
  'k',
  'A',
  'Z',
  '0',
  '9',
  '-',
  '-',
  '.',
  '_',
  '\n',
  '\r\n',
  '\r',
  '\t',
  ' ',
  'é',
  '😀',
  '${',
  '${',
  '$${',
  '${a:',
  '${db-1:',
  '}',
  '${config:x}',
  '${A:b}',
];
const text = fc.array(fc.constantFrom(...PIECES), { maxLength: 39, size: 'max' }).map((pieces) => pieces.join(''));

/** Checks `predicate` over RUNS texts of `arb`, with this run's seed. */
function check(arb: fc.Arbitrary<string>, predicate: (text: string) => void): void {
  fc.assert(fc.property(arb, predicate), { numRuns: RUNS, seed: SEED });
}

test('rendering each placeholder as its own text reproduces the input with each $${ turned into ${', () => {
  let placeholders = 0;
  let escapes = 0;
  check(text, (t) => {
    assert.is(renderPlaceholders(t, original), t.replaceAll('$${', '${'), JSON.stringify(t));
    placeholders += parsePlaceholders(t).length;
    if (t.includes('$${')) escapes += 1;
  });
  // The texts must exercise what they claim to, or the property proves nothing.
  assert.ok(placeholders > RUNS / 5, `only ${placeholders} placeholders in ${RUNS} texts`);
  assert.ok(escapes > RUNS / 5, `only ${escapes} of ${RUNS} texts with an escape`);
});

test('a text without $${ renders to itself when each placeholder is written back', () => {
  let placeholders = 0;
  check(
    text.filter((t) => !t.includes('$${')),
    (t) => {
      assert.is(renderPlaceholders(t, original), t, JSON.stringify(t));
      placeholders += parsePlaceholders(t).length;
    },
  );
  assert.ok(placeholders > RUNS / 5, `only ${placeholders} placeholders in ${RUNS} texts without an escape`);
});

test('parsePlaceholders never throws and each line and column points at the placeholder text', () => {
  check(text, (t) => {
    const lines = t.split('\n');
    for (const p of parsePlaceholders(t)) {
      const rest = [...lines[p.line - 1]!].slice(p.column - 1).join('');
      assert.ok(rest.startsWith('$' + `{${p.kind}:${p.name}}`), `${JSON.stringify(p)} in ${JSON.stringify(t)}`);
      assert.match(p.kind, /^[a-z][a-z0-9-]*$/);
      assert.match(p.name, /^[^\s{}$\-=+?][^\s{}$]*$/);
    }
  });
});

test('rendering calls the resolver exactly for the placeholders parsing finds, in the same order', () => {
  check(text, (t) => {
    const seen: Placeholder[] = [];
    renderPlaceholders(t, (p) => {
      seen.push(p);
      return '';
    });
    assert.equal(seen, parsePlaceholders(t), JSON.stringify(t));
  });
});

test.run();
