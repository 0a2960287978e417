// The seat of a rollout fleet, run one of two ways: its bundle copied alone (a process a test can
// SIGKILL), or startSeat in the test's process, on the fleet's clock, read from the same command
// line the bundle parses. The one in process can be asked whether it has handled all it was given
// (Seat.settled), so a test asserts that nothing happened without a fixed sleep.
import { connect } from '@nats-io/transport-node';
import { createLogger } from '../../src/shared/cli/log.ts';
import { parseServe } from '../../src/server/seat/command-line.ts';
import { startSeat } from '../../src/server/seat/seat.ts';
import { startBundle } from './bundle.ts';
import type { JumpClock } from './clock.ts';

/** How a fleet's seat runs. */
export type SeatRun = 'bundle' | 'in-process';

/** The fleet's seat, however it runs. */
export type FleetSeat = {
  run: SeatRun;
  /** Its log lines so far, as the bundle writes them to stderr (at info and above). */
  stderr(): string;
  /** Ends it: the bundle by SIGKILL; the one in process stopped, its connection closed. */
  kill(): void;
  /** Resolves once it has ended. */
  exited: Promise<unknown>;
  /** Resolves once it has handled every change stored so far in what it watches (in process only). */
  settled(): Promise<void>;
};

/** Starts the seat with `args` (after `--nats url`) and resolves once it is ready. */
export async function startFleetSeat(run: SeatRun, at: { dir: string; url: string; clock: JumpClock }, args: string[]): Promise<FleetSeat> {
  if (run === 'bundle') {
    const seat = startBundle('node', at.dir, 'server', ['--nats', at.url, ...args]);
    await seat.waitForLog(/seat ready/, 15_000);
    return {
      run,
      stderr: () => seat.stderr(),
      kill: () => seat.kill(),
      exited: seat.exited,
      settled: () => Promise.reject(new Error('the seat bundle cannot say it has settled: run it in process')),
    };
  }
  const parsed = parseServe(['--nats', at.url, ...args], {}, () => '');
  if (!parsed.ok || parsed.value.command !== 'serve') throw new Error(`seat flags ${args.join(' ')}: ${parsed.ok ? 'not a seat' : parsed.reason}`);
  const opts = parsed.value;
  const lines: string[] = [];
  const log = createLogger({ prefix: false, least: 'info', write: (line) => void lines.push(line + '\n') });
  const nc = await connect({ servers: at.url, name: 'seat in process' });
  const seat = await startSeat({
    nc,
    log,
    archives: opts.archives,
    replicas: opts.replicas,
    ...(opts.rollout ? { rollout: opts.rollout } : {}),
    time: { now: at.clock.now, timer: at.clock.timer },
  });
  let ended = () => {};
  const exited = new Promise<void>((resolve) => (ended = resolve));
  return {
    run,
    stderr: () => lines.join(''),
    kill: () =>
      void seat
        .stop()
        .then(() => nc.close())
        .finally(ended),
    exited,
    async settled() {
      await seat.settled();
      // Its health lines reached the server before the test reads what it heard.
      await nc.flush();
    },
  };
}
