// What both entries share: waiting for SIGTERM or SIGINT, printing a line, and ending the process with a code.
import { safeText } from './safe-text.ts';
import { errorText } from '../base/errors.ts';

/** Resolves on the first SIGTERM or SIGINT; install it first, so a signal during start-up is a clean stop too. */
export function untilSignalled(): Promise<void> {
  return new Promise((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
}

/**
 * Runs an entry's main: its code becomes the exit code; a throw is one line on stderr and exit 1. A
 * reader that stops reading (`status | head -1`) ends nothing: what is left to print is dropped and
 * the command ends with its own code, where node threw an unhandled EPIPE with its stack.
 */
export function runMain(program: string, main: () => Promise<number>): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') throw err;
    });
  }
  main().then(
    (code) => {
      // Let stdout flush; force the exit only if something still holds the loop open.
      process.exitCode = code;
      setTimeout(() => process.exit(code), 2000).unref();
    },
    (err) => {
      printLine(process.stderr, `${program}: ${errorText(err)}`);
      process.exit(1);
    },
  );
}

/** Writes `line` to `stream` as one line of safe text (DESIGN §3): whatever bus text it quotes, it drives no terminal and forges no line. */
export function printLine(stream: NodeJS.WritableStream, line: string): void {
  stream.write(`${safeText(line)}\n`);
}
