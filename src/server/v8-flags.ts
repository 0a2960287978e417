// The V8 settings the server bundle gives itself, at the first line it runs: `node dist/server.js`
// (a systemd unit's ExecStart, the README's commands) takes no node flag on the command line, and
// the two flags below are read each time V8 sizes a generation, so they work from here (as the
// client's, src/client/v8-flags.ts).
import * as v8 from 'node:v8';

/**
 * The flags set. The young generation kept at its first size (two 1 MiB semi-spaces) instead of
 * growing to 32 MiB, and the old generation let grow by half of what a collection leaves live
 * rather than up to fourfold: a seat's cold start over 50,000 assignments keeps about 40 MiB live
 * but peaked at 197–232 MiB RSS, the rest garbage V8 had not yet been asked to collect
 * (bench/seat-scale.ts; docs/scale.md has the runs). Deno takes the call and ignores it.
 */
export const SERVER_V8_FLAGS: readonly string[] = ['--semi-space-growth-factor=1', '--heap-growing-percent=50'];

// A runtime without the call (none known) runs the server with its own heap settings.
if (typeof v8.setFlagsFromString === 'function') for (const flag of SERVER_V8_FLAGS) v8.setFlagsFromString(flag);
