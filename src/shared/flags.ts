// The flag table every program reads (DESIGN §10): node:util parseArgs splits argv; this file adds the
// environment fallbacks, the conversions, and the one-line reasons that name the flag.
import { parseArgs } from 'node:util';
import { fail, ok, type Parsed } from './result.ts';

/** How one flag is read. */
export type FlagSpec = {
  /** The flag without its dashes. */
  name: string;
  /** The environment variable read when the flag is absent. */
  env?: string;
  /** `string`, a comma-separated `list` (the flag may be repeated), a non-negative `int`, or a valueless `bool`. */
  type: 'string' | 'list' | 'int' | 'bool';
  /** The value's name in --help. */
  arg?: string;
  /** One line for --help. */
  help: string;
};

/** Parsed flags by name, and the words that were not flags. */
export type FlagValues = {
  values: Record<string, string | string[] | number | boolean | undefined>;
  positional: string[];
  help: boolean;
  version: boolean;
};

/** One `--flag`, `--flag value`, `--flag=value` or `-h` as parseArgs splits it. */
type OptionToken = { kind: 'option'; name: string; rawName: string; value?: string; inlineValue?: boolean };

/** The flags every program takes besides its table. */
const BUILTIN = { help: { type: 'boolean', short: 'h' }, version: { type: 'boolean' } } as const;

/**
 * Parses argv (without node and script) and env against the specs; the first bad flag is a reason.
 * parseArgs runs without `strict` and its tokens are checked here, because strict mode refuses
 * `--settle -1` as ambiguous (the flag's own rule should say what is wrong with -1) and names the
 * flag only inside its English message; the checks are strict mode's otherwise.
 */
export function parseFlags(argv: readonly string[], env: NodeJS.ProcessEnv, specs: readonly FlagSpec[]): Parsed<FlagValues> {
  const options = { ...Object.fromEntries(specs.map((s) => [s.name, { type: s.type === 'bool' ? 'boolean' : 'string' } as const])), ...BUILTIN };
  const { tokens } = parseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  const given = new Map<string, string | true>();
  const positional: string[] = [];
  let help = false;
  let version = false;
  for (const token of tokens) {
    if (token.kind === 'positional') positional.push(token.value);
    if (token.kind !== 'option') continue;
    const problem = tokenProblem(token as OptionToken, specs);
    if (problem !== undefined) return fail(problem);
    if (token.name === 'help') help = true;
    else if (token.name === 'version') version = true;
    else {
      // A list flag given again adds to it: `--node a --node b` is `--node a,b`.
      const before = given.get(token.name);
      const isList = specs.find((s) => s.name === token.name)?.type === 'list';
      given.set(token.name, isList && typeof before === 'string' ? `${before},${token.value}` : (token.value ?? true));
    }
  }
  const values: FlagValues['values'] = {};
  for (const spec of specs) {
    const raw = given.get(spec.name) ?? (spec.env ? env[spec.env] : undefined);
    if (raw === undefined || raw === '') continue;
    const value = convert(spec, raw, given.has(spec.name) ? `--${spec.name}` : `${spec.env}`);
    if (!value.ok) return value;
    values[spec.name] = value.value;
  }
  return ok({ values, positional, help, version });
}

/** What strict mode would throw for a token, worded as this project always has (tests match it). */
function tokenProblem(token: OptionToken, specs: readonly FlagSpec[]): string | undefined {
  const flag = token.rawName;
  const spec = specs.find((s) => s.name === token.name);
  // ERR_PARSE_ARGS_UNKNOWN_OPTION
  if (!spec && !Object.hasOwn(BUILTIN, token.name)) return `unknown flag ${flag} (see --help)`;
  // ERR_PARSE_ARGS_INVALID_OPTION_VALUE, a value given to a boolean
  if (!spec || spec.type === 'bool') return token.value === undefined ? undefined : `${flag} takes no value`;
  // ERR_PARSE_ARGS_INVALID_OPTION_VALUE, a missing value: `--archives --debug` is a forgotten value,
  // not a bucket named "--debug"; `--settle -1` is a value, refused below by the int rule.
  if (token.value === undefined || (!token.inlineValue && token.value.startsWith('--'))) return `${flag} needs a value`;
  return undefined;
}

function convert(spec: FlagSpec, given: string | true, source: string): Parsed<string | string[] | number | boolean> {
  if (spec.type === 'bool') return ok(given === true || /^(1|true|yes)$/i.test(given));
  const text = given as string;
  if (spec.type === 'int') {
    if (!/^\d+$/.test(text)) return fail(`${source} must be a non-negative integer, got "${text}"`);
    return ok(Number(text));
  }
  if (spec.type === 'list') {
    const items = text.split(',').map((s) => s.trim());
    if (items.some((s) => s === '')) return fail(`${source} has an empty item in "${text}"`);
    return ok(items);
  }
  return ok(text);
}

/** Formats the flags for --help. */
export function describeFlags(specs: readonly FlagSpec[]): string {
  const rows = specs.map((s) => {
    const left = `  --${s.name}${s.type === 'bool' ? '' : ` ${s.arg ?? s.type.toUpperCase()}`}`;
    const env = s.env ? ` [env ${s.env}]` : '';
    return `${left.padEnd(28)} ${s.help}${env}`;
  });
  return rows.join('\n');
}
