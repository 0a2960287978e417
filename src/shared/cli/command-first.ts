// A command put after its flags (issue 22): `server.js --nats URL status` read as the seat's own
// flags said `unexpected argument "status"`, and `--nats URL publish DIR --composition F` an unknown
// flag; the operator is shown the line as it should be written instead.

/** Flags whose value is not repeated in the line shown: it is a secret. */
const SECRET_FLAGS = new Set(['--password', '--token']);

/**
 * When a word of `argv` past the first is one of `commands`, the refusal to show instead of the
 * parser's: `the command comes first: node <program> <command> <the rest>`; undefined otherwise.
 */
export function commandFirst(argv: readonly string[], commands: readonly string[], program: string): string | undefined {
  const at = argv.findIndex((word, i) => i > 0 && commands.includes(word));
  if (at < 0) return undefined;
  const rest = argv.filter((_, i) => i !== at).map((word, i, all) => shownWord(word, all[i - 1]));
  return `the command comes first: node ${program} ${[argv[at]!, ...rest].join(' ')}`;
}

/** A word of the line shown: a secret flag's value left out, the rest as a shell reads it back. */
function shownWord(word: string, before: string | undefined): string {
  if (before !== undefined && SECRET_FLAGS.has(before)) return '…';
  const [flag] = word.split('=', 1);
  if (word.includes('=') && SECRET_FLAGS.has(flag!)) return `${flag}=…`;
  return shellWord(word);
}

/** `word` as a shell reads it back: as it is when plain, in single quotes otherwise. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
