// The shared flag parser (src/shared/cli/flags.ts, DESIGN §10): a table of argv and environment against
// the values or the one-line reason, and properties of every argv.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { describeFlags, openCommand, parseFlags, unexpectedArgument, valueSource, type FlagTable, type FlagValues } from '../src/shared/cli/flags.ts';

const SPECS = [
  { name: 'name', env: 'T_NAME', type: 'string', arg: 'NAME', help: 'a name' },
  { name: 'urls', env: 'T_URLS', type: 'list', arg: 'URL[,URL…]', help: 'some URLs' },
  { name: 'count', env: 'T_COUNT', type: 'int', arg: 'N', help: 'a count' },
  { name: 'debug', env: 'T_DEBUG', type: 'bool', help: 'log debug lines' },
  { name: 'tls-ca', type: 'string', arg: 'FILE', help: 'no environment variable' },
  { name: 'dir', env: 'T_DIR', type: 'repeat', arg: 'NAME=PATH', help: 'each value one item' },
] as const satisfies FlagTable;

/** What a row expects: the parsed flags (absent parts: empty, false), the flags argv set (absent: those of `values`), or the reason. */
type Expected = { values?: FlagValues<typeof SPECS>; onCommandLine?: string[]; positional?: string[]; help?: boolean; version?: boolean } | { reason: string };
type Row = [what: string, argv: string[], env: NodeJS.ProcessEnv, expected: Expected];

const ROWS: Row[] = [
  ['nothing given is nothing parsed', [], {}, { values: {} }],
  ['a string flag with its value as the next word', ['--name', 'web'], {}, { values: { name: 'web' } }],
  ['a string flag with its value after =', ['--name=web'], {}, { values: { name: 'web' } }],
  ['a value after = may start with --', ['--name=--odd'], {}, { values: { name: '--odd' } }],
  ['a value may start with one dash', ['--name', '-'], {}, { values: { name: '-' } }],
  ['an empty value is no value: the default applies', ['--name='], { T_NAME: 'env' }, { values: {} }],
  [
    'a flag and a variable: only the flag is on the command line',
    ['--count', '2'],
    { T_NAME: 'env' },
    { values: { name: 'env', count: 2 }, onCommandLine: ['count'] },
  ],
  ['the last of a repeated flag wins', ['--name', 'a', '--name=b'], {}, { values: { name: 'b' } }],
  ['a dashed flag name', ['--tls-ca', '/ca.pem'], {}, { values: { 'tls-ca': '/ca.pem' } }],
  ['the environment is read when the flag is absent', [], { T_NAME: 'env', T_COUNT: '3' }, { values: { name: 'env', count: 3 }, onCommandLine: [] }],
  ['the flag wins over the environment', ['--name', 'flag'], { T_NAME: 'env' }, { values: { name: 'flag' } }],
  ['an empty environment variable is absent', [], { T_NAME: '' }, { values: {} }],
  ['a list is split on commas and trimmed', ['--urls', 'a:1, b:2'], {}, { values: { urls: ['a:1', 'b:2'] } }],
  ['a list from the environment', [], { T_URLS: 'a:1,b:2' }, { values: { urls: ['a:1', 'b:2'] }, onCommandLine: [] }],
  ['a list flag given again adds to it', ['--urls', 'a:1', '--urls', 'b:2,c:3'], {}, { values: { urls: ['a:1', 'b:2', 'c:3'] } }],
  ['a list with an empty item names the flag', ['--urls', 'a,,b'], {}, { reason: '--urls has an empty item in "a,,b"' }],
  ['a list with an empty item names the variable', [], { T_URLS: 'a,' }, { reason: 'T_URLS has an empty item in "a,"' }],
  ['an int', ['--count', '20'], {}, { values: { count: 20 } }],
  ['zero is an int', ['--count=0'], {}, { values: { count: 0 } }],
  ['an int that is a word', ['--count', 'soon'], {}, { reason: '--count must be a non-negative integer, got "soon"' }],
  ['a negative int is a value its rule refuses', ['--count', '-1'], {}, { reason: '--count must be a non-negative integer, got "-1"' }],
  ['a negative int after =', ['--count=-1'], {}, { reason: '--count must be a non-negative integer, got "-1"' }],
  ['a fraction is not an int', ['--count', '1.5'], {}, { reason: '--count must be a non-negative integer, got "1.5"' }],
  ['a bad int from the environment names the variable', [], { T_COUNT: 'x' }, { reason: 'T_COUNT must be a non-negative integer, got "x"' }],
  ['a bool flag', ['--debug'], {}, { values: { debug: true } }],
  ['a bool with a value', ['--debug=yes'], {}, { reason: '--debug takes no value' }],
  ['a bool flag does not take the next word', ['--debug', 'yes'], {}, { values: { debug: true }, positional: ['yes'] }],
  ['a bool from the environment: 1', [], { T_DEBUG: '1' }, { values: { debug: true }, onCommandLine: [] }],
  ['a bool from the environment: TRUE', [], { T_DEBUG: 'TRUE' }, { values: { debug: true }, onCommandLine: [] }],
  ['a bool from the environment: yes', [], { T_DEBUG: 'yes' }, { values: { debug: true }, onCommandLine: [] }],
  ['a bool from the environment: 0', [], { T_DEBUG: '0' }, { values: { debug: false }, onCommandLine: [] }],
  ['a bool from the environment: no', [], { T_DEBUG: 'no' }, { values: { debug: false }, onCommandLine: [] }],
  ['an unknown flag', ['--bogus'], {}, { reason: 'unknown flag --bogus (see --help)' }],
  ['an unknown flag with a value', ['--bogus=1'], {}, { reason: 'unknown flag --bogus (see --help)' }],
  ['an unknown short flag', ['-x'], {}, { reason: 'unknown flag -x (see --help)' }],
  ['a flag with nothing after it', ['--name'], {}, { reason: '--name needs a value' }],
  ['a flag followed by another flag', ['--name', '--debug'], {}, { reason: '--name needs a value' }],
  ['an int flag with nothing after it', ['--count'], { T_COUNT: '3' }, { reason: '--count needs a value' }],
  ['the first problem is the one said', ['--bogus', '--name'], {}, { reason: 'unknown flag --bogus (see --help)' }],
  ['a problem after --help is still said', ['--help', '--bogus'], {}, { reason: 'unknown flag --bogus (see --help)' }],
  ['a bad environment value is said even with --help', ['--help'], { T_COUNT: 'x' }, { reason: 'T_COUNT must be a non-negative integer, got "x"' }],
  ['--help', ['--help'], {}, { values: {}, help: true }],
  ['-h', ['-h'], {}, { values: {}, help: true }],
  ['--version', ['--version'], {}, { values: {}, version: true }],
  ['--help with a value', ['--help=1'], {}, { reason: '--help takes no value' }],
  [
    'words that are not flags are positional, in order, around flags',
    ['query', '--name', 'x', 'registry'],
    {},
    { values: { name: 'x' }, positional: ['query', 'registry'] },
  ],
  ['a lone dash is positional', ['-'], {}, { values: {}, positional: ['-'] }],
  ['a repeated flag keeps each value whole, commas too', ['--dir', 'a=/x,y', '--dir=b=/z'], {}, { values: { dir: ['a=/x,y', 'b=/z'] } }],
  ['a repeated flag keeps an empty value for its command to judge', ['--dir', 'a=/x', '--dir='], {}, { values: { dir: ['a=/x', ''] } }],
  ['a repeated flag from the environment is one item', [], { T_DIR: 'a=/x,y' }, { values: { dir: ['a=/x,y'] }, onCommandLine: [] }],
  ['a repeated flag on the command line replaces its variable', ['--dir', 'b=/1'], { T_DIR: 'a=/x' }, { values: { dir: ['b=/1'] } }],
  ['a repeated flag with nothing after it', ['--dir'], {}, { reason: '--dir needs a value' }],
  ['after -- every word is positional', ['--', '--name', 'x'], {}, { values: {}, positional: ['--name', 'x'] }],
];

for (const [what, argv, env, expected] of ROWS) {
  test(`parseFlags: ${what} (${JSON.stringify(argv)})`, () => {
    const parsed = parseFlags(argv, env, SPECS);
    if ('reason' in expected) {
      assert.equal(parsed, { ok: false, reason: expected.reason });
      return;
    }
    assert.ok(parsed.ok, parsed.ok ? '' : parsed.reason);
    if (!parsed.ok) return;
    assert.equal(parsed.value, {
      values: expected.values ?? {},
      onCommandLine: new Set(expected.onCommandLine ?? Object.keys(expected.values ?? {})),
      positional: expected.positional ?? [],
      help: expected.help ?? false,
      version: expected.version ?? false,
    });
  });
}

test('parseFlags never throws, and a refusal is one line naming a flag or a variable', () => {
  const word = fc.oneof(
    fc.constantFrom(
      '--name',
      '--urls',
      '--count',
      '--debug',
      '--tls-ca',
      '--dir',
      '--help',
      '-h',
      '--version',
      '--',
      '-',
      '--bogus',
      '-x',
      '--__proto__',
      '--constructor',
    ),
    fc.string(),
    fc.string().map((s) => `--${s}`),
    fc.string().map((s) => `--count=${s}`),
  );
  fc.assert(
    fc.property(fc.array(word, { maxLength: 8 }), (argv) => {
      const parsed = parseFlags(argv, {}, SPECS);
      if (parsed.ok) return;
      assert.not.ok(parsed.reason.includes('\n'), parsed.reason);
      assert.match(parsed.reason, /^(unknown flag )?-/);
    }),
  );
});

test('a value reads the same as the next word and after =, unless it starts with --', () => {
  fc.assert(
    fc.property(
      fc.string().filter((s) => s !== '' && !s.startsWith('--')),
      (value) => {
        assert.equal(parseFlags(['--name', value], {}, SPECS), parseFlags([`--name=${value}`], {}, SPECS));
      },
    ),
  );
});

test('valueSource names the variable when the environment gave the value, else the flag', () => {
  const source = (argv: string[], env: NodeJS.ProcessEnv, name: string) => {
    const parsed = parseFlags(argv, env, SPECS);
    assert.ok(parsed.ok);
    return parsed.ok ? valueSource(SPECS, name, parsed.value.onCommandLine, env) : '';
  };
  assert.is(source([], { T_COUNT: '3' }, 'count'), 'T_COUNT');
  assert.is(source(['--count', '3'], { T_COUNT: '4' }, 'count'), '--count');
  assert.is(source([], {}, 'count'), '--count', 'a default is named by its flag');
  assert.is(source([], { T_COUNT: '' }, 'count'), '--count', 'an empty variable is as unset');
  assert.is(source(['--tls-ca', 'x'], {}, 'tls-ca'), '--tls-ca');
});

test('describeFlags gives one line per flag with its value name and environment variable', () => {
  const lines = describeFlags(SPECS).split('\n');
  assert.is(lines.length, SPECS.length);
  assert.match(lines[0]!, /^ {2}--name NAME +a name \[env T_NAME\]$/);
  assert.match(lines[2]!, /^ {2}--count N +a count \[env T_COUNT\]$/);
  assert.match(lines[3]!, /^ {2}--debug +log debug lines \[env T_DEBUG\]$/);
  assert.match(lines[4]!, /^ {2}--tls-ca FILE +no environment variable$/);
});

test('openCommand answers a bad flag, then --help, then --version, before the command judges anything', () => {
  const help = () => 'the help';
  assert.equal(openCommand(['--help', '--bogus'], {}, SPECS, help), { answered: { ok: false, reason: 'unknown flag --bogus (see --help)' } });
  assert.equal(openCommand(['--version', '-h', 'extra'], {}, SPECS, help), { answered: { ok: true, value: { command: 'help', text: 'the help' } } });
  assert.equal(openCommand(['--version', 'extra'], {}, SPECS, help), { answered: { ok: true, value: { command: 'version' } } });
  assert.equal(openCommand(['--count', '2', 'extra'], { T_NAME: 'env' }, SPECS, help), {
    values: { name: 'env', count: 2 },
    onCommandLine: new Set(['count']),
    positional: ['extra'],
  });
  assert.equal(unexpectedArgument('extra'), { ok: false, reason: 'unexpected argument "extra" (see --help)' });
});

test('the values are typed by the table: each name with its flag type, no other name', () => {
  const parsed = parseFlags(['--count', '2', '--urls', 'a,b', '--debug'], {}, SPECS);
  if (!parsed.ok) throw new Error(parsed.reason);
  const { values } = parsed.value;
  const typed: { count?: number; urls?: string[]; debug?: boolean; name?: string } = values;
  assert.equal(typed, { count: 2, urls: ['a', 'b'], debug: true });
  // @ts-expect-error a name the table does not hold is no value of it
  assert.is(values.bogus, undefined);
  // @ts-expect-error an int flag is a number, not a string
  const asText: string | undefined = values.count;
  assert.is(asText, 2);
});

test.run();
