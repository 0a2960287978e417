// The V8 settings the client bundle gives itself, at the first line it runs. A bundle run as
// `node dist/client.js` (a systemd unit's ExecStart, the README's commands) takes no node flag on the
// command line, and `--max-semi-space-size` is read only when the heap is made, before any script;
// the growth factor is read each time the young generation would grow, so it works from here.
import * as v8 from 'node:v8';

/**
 * The flags set: the young generation kept at its first size (two 1 MiB semi-spaces) instead of
 * growing to 16 MiB. A cold start of 1,000 modules makes its garbage faster than V8 collects a
 * grown young generation, and that garbage was the client's peak RSS (115 → 96–100 MiB; the time
 * within noise, bench/latency.ts). Deno takes the call and ignores it (its heap is left as it is).
 */
export const CLIENT_V8_FLAGS: readonly string[] = ['--semi-space-growth-factor=1'];

// A runtime without the call (none known) runs the client with its own heap settings.
if (typeof v8.setFlagsFromString === 'function') for (const flag of CLIENT_V8_FLAGS) v8.setFlagsFromString(flag);
