// A small flag parser: `--flag value` or `--flag=value`, each flag also read from the environment.
import type { Parsed } from './result.ts';

/** How one flag is read. */
export type FlagSpec = {
  /** The flag without its dashes. */
  name: string;
  /** The environment variable read when the flag is absent. */
  env?: string;
  /** `string`, a comma-separated `list`, a non-negative `int`, or a valueless `bool`. */
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

/** Parses argv (without node and script) and env against the specs; a bad flag is a reason. */
export function parseFlags(argv: readonly string[], env: NodeJS.ProcessEnv, specs: readonly FlagSpec[]): Parsed<FlagValues> {
  const raw = new Map<string, string | true>();
  const positional: string[] = [];
  let help = false;
  let version = false;
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    if (word === '--help' || word === '-h') { help = true; continue; }
    if (word === '--version') { version = true; continue; }
    if (!word.startsWith('--')) { positional.push(word); continue; }
    const eq = word.indexOf('=');
    const name = word.slice(2, eq < 0 ? undefined : eq);
    const spec = specs.find((s) => s.name === name);
    if (!spec) return { ok: false, reason: `unknown flag --${name} (see --help)` };
    if (spec.type === 'bool') {
      if (eq >= 0) return { ok: false, reason: `--${name} takes no value` };
      raw.set(name, true);
      continue;
    }
    const value = eq >= 0 ? word.slice(eq + 1) : argv[++i];
    // `--archives --debug` is a forgotten value, not a bucket named "--debug".
    if (value === undefined || (eq < 0 && value.startsWith('--'))) return { ok: false, reason: `--${name} needs a value` };
    raw.set(name, value);
  }
  const values: FlagValues['values'] = {};
  for (const spec of specs) {
    const given = raw.get(spec.name) ?? (spec.env ? env[spec.env] : undefined);
    if (given === undefined || given === '') continue;
    const source = raw.has(spec.name) ? `--${spec.name}` : `${spec.env}`;
    const value = convert(spec, given, source);
    if (!value.ok) return value;
    values[spec.name] = value.value;
  }
  return { ok: true, value: { values, positional, help, version } };
}

function convert(spec: FlagSpec, given: string | true, source: string): Parsed<string | string[] | number | boolean> {
  if (spec.type === 'bool') return { ok: true, value: given === true || /^(1|true|yes)$/i.test(given) };
  const text = given as string;
  if (spec.type === 'int') {
    if (!/^\d+$/.test(text)) return { ok: false, reason: `${source} must be a non-negative integer, got "${text}"` };
    return { ok: true, value: Number(text) };
  }
  if (spec.type === 'list') {
    const items = text.split(',').map((s) => s.trim());
    if (items.some((s) => s === '')) return { ok: false, reason: `${source} has an empty item in "${text}"` };
    return { ok: true, value: items };
  }
  return { ok: true, value: text };
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
