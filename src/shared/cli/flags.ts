// The flag tables every program reads (DESIGN §10): node:util parseArgs splits argv; this file adds the
// environment fallbacks, the conversions, and the one-line reasons that name the flag. A program
// declares its table `as const`, and that one table types the parsed values, prints --help with
// each flag's variable, and opens every subcommand the same way (refusal, --help, --version).
import { parseArgs } from 'node:util';
import { fail, ok, type Parsed } from '../base/result.ts';

/** How one flag is read; a table of them is declared `as const` so each name and type reach the parsed values. */
export type FlagSpec = {
  /** The flag without its dashes. */
  readonly name: string;
  /** The environment variable read when the flag is absent. */
  readonly env?: string;
  /**
   * `string`, a comma-separated `list` (the flag may be repeated), a `repeat`ed flag whose every
   * value is one item as given (commas kept: `--dir data=/srv/a,b`), a non-negative `int`, or a
   * valueless `bool`.
   */
  readonly type: 'string' | 'list' | 'repeat' | 'int' | 'bool';
  /** The value's name in --help. */
  readonly arg?: string;
  /** One line for --help. */
  readonly help: string;
};

/** A program's or a subcommand's flags, in the order --help lists them. */
export type FlagTable = readonly FlagSpec[];

/** What each kind of flag parses to. */
type ValueOfType = { string: string; list: string[]; repeat: string[]; int: number; bool: boolean };

/** A table's flag names. */
export type FlagName<T extends FlagTable> = T[number]['name'];

/** Parsed values by flag name, each of its flag's type; absent when neither given nor set in the environment. */
export type FlagValues<T extends FlagTable> = { readonly [S in T[number] as S['name']]?: ValueOfType[S['type']] };

/** Parsed flags by name, the flags the command line itself set, and the words that were not flags. */
export type ParsedFlags<T extends FlagTable> = {
  /** Each flag's value, from argv or else its variable. */
  values: FlagValues<T>;
  /** The flags whose value came from argv, not from the environment (a unit's environment may set any). */
  onCommandLine: ReadonlySet<FlagName<T>>;
  /** The words that are not flags, in order. */
  positional: string[];
  /** Whether --help or -h was given. */
  help: boolean;
  /** Whether --version was given. */
  version: boolean;
};

/** One `--flag`, `--flag value`, `--flag=value` or `-h` as parseArgs splits it. */
type OptionToken = { kind: 'option'; name: string; rawName: string; value?: string; inlineValue?: boolean };

/** The flags every program takes besides its table. */
const BUILTIN = { help: { type: 'boolean', short: 'h' }, version: { type: 'boolean' } } as const;

/**
 * Parses argv (without node and script) and env against the table; the first bad flag is a reason.
 * parseArgs runs without `strict` and its tokens are checked here, because strict mode refuses
 * `--settle -1` as ambiguous (the flag's own rule should say what is wrong with -1) and names the
 * flag only inside its English message; the checks are strict mode's otherwise.
 */
export function parseFlags<const T extends FlagTable>(argv: readonly string[], env: NodeJS.ProcessEnv, table: T): Parsed<ParsedFlags<T>> {
  const options = { ...Object.fromEntries(table.map((s) => [s.name, { type: s.type === 'bool' ? 'boolean' : 'string' } as const])), ...BUILTIN };
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const given = new Map<string, string | true>();
  const repeated = new Map<string, string[]>();
  const positional: string[] = [];
  let help = false;
  let version = false;
  for (const token of tokens) {
    if (token.kind === 'positional') positional.push(token.value);
    if (token.kind !== 'option') continue;
    const problem = tokenProblem(token, table);
    if (problem !== undefined) return fail(problem);
    if (token.name === 'help') help = true;
    else if (token.name === 'version') version = true;
    else {
      // A list flag given again adds to it: `--node a --node b` is `--node a,b`.
      const before = given.get(token.name);
      const type = table.find((s) => s.name === token.name)?.type;
      given.set(token.name, type === 'list' && typeof before === 'string' ? `${before},${token.value}` : (token.value ?? true));
      if (type === 'repeat') repeated.set(token.name, [...(repeated.get(token.name) ?? []), token.value ?? '']);
    }
  }
  const values: Record<string, ValueOfType[FlagSpec['type']]> = {};
  const onCommandLine = new Set<FlagName<T>>();
  for (const spec of table) {
    // A repeated flag's items are each as given, an empty one too: the command judges them.
    const items = repeated.get(spec.name);
    if (items !== undefined) {
      values[spec.name] = items;
      onCommandLine.add(spec.name);
      continue;
    }
    const raw = given.get(spec.name) ?? (spec.env ? env[spec.env] : undefined);
    if (raw === undefined || raw === '') continue;
    const value = convert(spec, raw, given.has(spec.name) ? `--${spec.name}` : `${spec.env}`);
    if (!value.ok) return value;
    values[spec.name] = value.value;
    if (given.has(spec.name)) onCommandLine.add(spec.name);
  }
  // The loop above set each flag by its spec's name and type: the shape FlagValues<T> states.
  return ok({ values: values as FlagValues<T>, onCommandLine, positional, help, version });
}

/**
 * How an error names where a flag's value came from: its variable when the environment set it (a
 * unit's env file, which is what the operator must edit), else `--flag`.
 */
export function valueSource(table: FlagTable, name: string, onCommandLine: ReadonlySet<string>, env: NodeJS.ProcessEnv): string {
  const variable = table.find((s) => s.name === name)?.env;
  return onCommandLine.has(name) || variable === undefined || env[variable] === undefined || env[variable] === '' ? `--${name}` : variable;
}

/** What a program answers before reading its flags any further: its --help text, or its version. */
export type Asked = { command: 'help'; text: string } | { command: 'version' };

/** A command line opened: answered already (a refusal, --help or --version), or the flags to go on with. */
export type Opening<T extends FlagTable> = { answered: Parsed<Asked> } | Omit<ParsedFlags<T>, 'help' | 'version'>;

/**
 * The opening of every program and subcommand: parses argv and env against the table, then answers
 * a bad flag with its reason, --help with `help()`, and --version, in that order; anything else is
 * the command's to judge.
 */
export function openCommand<const T extends FlagTable>(argv: readonly string[], env: NodeJS.ProcessEnv, table: T, help: () => string): Opening<T> {
  const parsed = parseFlags(argv, env, table);
  if (!parsed.ok) return { answered: parsed };
  const { help: helpAsked, version, ...flags } = parsed.value;
  if (helpAsked) return { answered: ok({ command: 'help', text: help() }) };
  if (version) return { answered: ok({ command: 'version' }) };
  return flags;
}

/** openCommand for a command that takes flags only: a word beside them is refused as unexpected. */
export function openFlagsOnly<const T extends FlagTable>(argv: readonly string[], env: NodeJS.ProcessEnv, table: T, help: () => string): Opening<T> {
  const opened = openCommand(argv, env, table, help);
  if ('answered' in opened) return opened;
  const [extra] = opened.positional;
  return extra === undefined ? opened : { answered: unexpectedArgument(extra) };
}

/** The refusal of a word a command does not take. */
export function unexpectedArgument(word: string): { ok: false; reason: string } {
  return fail(`unexpected argument "${word}" (see --help)`);
}

/** What strict mode would throw for a token, worded as this project always has (tests match it). */
function tokenProblem(token: OptionToken, table: FlagTable): string | undefined {
  const flag = token.rawName;
  const spec = table.find((s) => s.name === token.name);
  // ERR_PARSE_ARGS_UNKNOWN_OPTION
  if (!spec && !Object.hasOwn(BUILTIN, token.name)) return `unknown flag ${flag} (see --help)`;
  // ERR_PARSE_ARGS_INVALID_OPTION_VALUE, a value given to a boolean
  if (!spec || spec.type === 'bool') return token.value === undefined ? undefined : `${flag} takes no value`;
  // ERR_PARSE_ARGS_INVALID_OPTION_VALUE, a missing value: `--archives --debug` is a forgotten value,
  // not a bucket named "--debug"; `--settle -1` is a value, refused below by the int rule.
  if (token.value === undefined || (!token.inlineValue && token.value.startsWith('--'))) return `${flag} needs a value`;
  return undefined;
}

function convert(spec: FlagSpec, given: string | true, source: string): Parsed<ValueOfType[FlagSpec['type']]> {
  // Only a bool flag is given without a value (tokenProblem refuses any other).
  if (given === true || spec.type === 'bool') return ok(given === true || /^(1|true|yes)$/i.test(given));
  if (spec.type === 'int') {
    if (!/^\d+$/.test(given)) return fail(`${source} must be a non-negative integer, got "${given}"`);
    return ok(Number(given));
  }
  // A repeated flag's items come from argv; its variable, if it has one, is one item.
  if (spec.type === 'repeat') return ok([given]);
  if (spec.type === 'list') {
    const items = given.split(',').map((s) => s.trim());
    if (items.some((s) => s === '')) return fail(`${source} has an empty item in "${given}"`);
    return ok(items);
  }
  return ok(given);
}

/** Formats the flags for --help, one line each with its value's name and its environment variable. */
export function describeFlags(table: FlagTable): string {
  const rows = table.map((s) => {
    const left = `  --${s.name}${s.type === 'bool' ? '' : ` ${s.arg ?? s.type.toUpperCase()}`}`;
    const env = s.env ? ` [env ${s.env}]` : '';
    return `${left.padEnd(28)} ${s.help}${env}`;
  });
  return rows.join('\n');
}
