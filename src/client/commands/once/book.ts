// How each module of a node stands for --once and --dry-run: its last report as its runs wrote it,
// and whether the engine could be reached for its last fill (known at once; its report is written behind the fill).
import type { FillReply, FillRequest } from '../../../shared/contract/fill-protocol.ts';
import { safeText } from '../../../shared/cli/safe-text.ts';
import { EngineUnavailable } from '../../handoff/engine-errors.ts';
import type { EngineClient } from '../../handoff/fill-socket.ts';
import type { Waiting } from '../../fill/fill.ts';
import type { ReportBody } from '../../report/reporter.ts';

/** Where a module stands: `unreported` until its first run wrote a report. */
export type Standing = {
  module: string;
  state: ReportBody['state'] | 'unreported';
  build?: string;
  reason?: string;
  waiting: Waiting[];
  /** The paths its last report lists (the files filled). */
  files: string[];
};

/** Each module's last report and engine trouble, and a promise that settles at the next report. */
export class ReportBook {
  readonly #reports = new Map<string, ReportBody>();
  readonly #unreachable = new Map<string, string>();
  #wake: () => void = () => {};
  #next: Promise<void> = this.#arm();

  /** Takes a report a module's run wrote. */
  record(module: string, body: ReportBody): void {
    this.#reports.set(module, body);
    this.#wake();
  }

  /** Notes that the engine could not be reached for the module's last fill, or that it was. */
  engine(module: string, unreachable: string | undefined): void {
    if (unreachable === undefined) this.#unreachable.delete(module);
    else this.#unreachable.set(module, unreachable);
  }

  /** Settles at the next report recorded after this call. */
  changed(): Promise<void> {
    return this.#next;
  }

  /** Where the module stands now. */
  standing(module: string): Standing {
    const report = this.#reports.get(module);
    const unreachable = this.#unreachable.get(module);
    const base = { module, waiting: report?.waiting ?? [], files: report?.files.map((f) => f.path) ?? [], ...(report ? { build: report.build } : {}) };
    if (unreachable !== undefined) return { ...base, state: 'waiting', reason: `engine not reachable: ${unreachable}` };
    if (!report) return { ...base, state: 'unreported', reason: 'no report yet: its first fill has not finished' };
    return { ...base, state: report.state, ...(report.reason !== undefined ? { reason: report.reason } : {}) };
  }

  #arm(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#wake = () => {
        this.#next = this.#arm();
        resolve();
      };
    });
  }
}

/** Whether nothing more can come of waiting: every module applied or failed (a failure waits for no value). */
export function allSettled(standings: readonly Standing[]): boolean {
  return standings.every((s) => s.state === 'applied' || s.state === 'failed');
}

/** One line saying why a module is not applied: its state, the values it waits for (with their files), the reason; safe text (DESIGN §3), as a reason may quote bus text. */
export function describeStanding(s: Standing): string {
  const values = s.waiting.map((w) => `${w.kind}:${w.name} (${w.files.join(', ')})`).join(', ');
  const state = s.state === 'unreported' ? 'waiting' : s.state;
  const parts = [values === '' ? state : `${state} for ${values}`, ...(s.reason !== undefined ? [s.reason] : [])];
  return safeText(`${s.module}: ${parts.join(': ')}`);
}

/** The engine client, telling the book for each module whether its last fill reached the engine. */
export function engineTellingBook(engine: EngineClient, book: ReportBook): EngineClient {
  return {
    fill: (req: Omit<FillRequest, 'id' | 'op'>): Promise<FillReply> =>
      engine.fill(req).then(
        (reply) => (book.engine(req.module, undefined), reply),
        (err: unknown) => {
          if (err instanceof EngineUnavailable) book.engine(req.module, err.message);
          throw err;
        },
      ),
    onKnock: (fn) => engine.onKnock(fn),
    close: () => engine.close(),
  };
}
