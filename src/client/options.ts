// What the node client can be asked (DESIGN §10): its run, --once and --dry-run, and lint, with the
// defaults its flags fall back on. The commands import their option types from here; the command
// line that fills them is command-line.ts.
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { BusOptions } from '../shared/bus/bus.ts';
import type { Asked } from '../shared/cli/flags.ts';

/** The settle window when --settle is not given, in ms. */
export const DEFAULT_SETTLE_MS = 20;
/** How long --once and --dry-run wait for every module to settle when --timeout is not given, in ms. */
export const DEFAULT_ONCE_TIMEOUT_MS = 60_000;
/** The longest --engine-timeout, in seconds: a timer past 2^31-1 ms would fire at once. */
export const MAX_ENGINE_TIMEOUT_S = Math.floor((2 ** 31 - 1) / 1000);
/** The archive cache when --cache is not given: the systemd cache dir, else ~/.cache. */
export function defaultCacheDir(env: NodeJS.ProcessEnv): string {
  return env['CACHE_DIRECTORY'] ?? join(homedir(), '.cache', 'mesh-provisioner');
}

/** What the client runs with: as a daemon, --once, or --dry-run. */
export type RunOptions = {
  command: 'run';
  /** This node's name. */
  node: string;
  /** How to reach the bus. */
  bus: BusOptions;
  /** The engine's fill socket. */
  socket: string;
  /** Where archives are kept by digest. */
  cache: string;
  /** The settle window, in ms. */
  settleMs: number;
  /** How long a fill may go unanswered by the engine, in ms. */
  engineTimeoutMs: number;
  /** The period of the alive message, in ms (--alive; DESIGN §14). */
  aliveMs: number;
  /** The only directory file:// archive refs are read under; absent: file:// refused. */
  archiveDir?: string;
  /** Whether debug lines are logged. */
  debug: boolean;
  /** Fill every module once and exit (--once, also set by --dry-run). */
  once: boolean;
  /** Render into this absolute dir instead of handing to the engine or writing to the bus (--dry-run). */
  dryRun?: string;
  /** How long --once waits for every module to settle, in ms. */
  timeoutMs: number;
};

/** What `lint` was asked. */
export type LintOptions = {
  command: 'lint';
  /** The archive, directory or template file. */
  input: string;
  /** A plan (DESIGN §4) to check the templates against. */
  plan?: string;
  /** Print one JSON object instead of lines. */
  json: boolean;
};

/** What the client was asked to do. */
export type ClientOptions = Asked | RunOptions | LintOptions;
