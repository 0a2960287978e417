// The V8 settings the client bundle gives itself, at the first line it runs. A bundle run as
// `node dist/client.js` (a systemd unit's ExecStart, the README's commands) takes no node flag on the
// command line, and `--max-semi-space-size` is read only when the heap is made, before any script;
// the two flags below are read each time V8 sizes a generation, so they work from here.
import * as v8 from 'node:v8';

/**
 * The flags set. The young generation kept at its first size (two 1 MiB semi-spaces) instead of
 * growing up to 32 MiB: a cold start of 1,000 modules makes garbage faster than V8 collects a grown
 * one. The old generation let grow by half of what a collection leaves live before the next one,
 * where V8 lets a small heap grow up to fourfold. A cold start of 1,000 modules peaked at 113–117
 * MiB, 96–100 with the first flag, 85–87 with both; the client's CPU within the noise of A/B runs
 * (bench/latency.ts). Deno takes the call and ignores it: its heap is left as it is.
 */
export const CLIENT_V8_FLAGS: readonly string[] = ['--semi-space-growth-factor=1', '--heap-growing-percent=50'];

// A runtime without the call (none known) runs the client with its own heap settings.
if (typeof v8.setFlagsFromString === 'function') for (const flag of CLIENT_V8_FLAGS) v8.setFlagsFromString(flag);
