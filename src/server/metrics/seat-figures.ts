// The seat's figures for `--metrics` (issue 33 item 4): counters the seat's hooks move (verb requests,
// busy answers, plan writes) and gauges read at each scrape from what the seat keeps (reports,
// rollouts, liveness), with prom-client's figures of the process, every name prefixed `provisioner_`.
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { REPORT_STATES } from '../../shared/contract/report.ts';
import { ROLLOUT_STATES, type RolloutStateName } from '../../shared/contract/rollout-state.ts';
import type { VerbCounter } from '../verb/serve.ts';
import { LIVENESS_NOT_KEPT, type NodesByLiveness } from './liveness.ts';
import { FIGURES, METRIC_PREFIX } from './names.ts';
import { ReportTally } from './report-tally.ts';

/** What the seat tells its figures as it runs; each hook is called where the thing happens. */
export type SeatObserver = {
  /** Each request of the verb and each busy answer. */
  verb: VerbCounter;
  /** A plan write ended: a put or a delete, done or refused. */
  planWritten(op: 'put' | 'delete', ok: boolean): void;
  /** A report seen in mesh-provisioner_applied (null: deleted). */
  report(key: string, value: Uint8Array | null): void;
};

/** Each module's rollout state, read at each scrape (the seat's RolloutDirector). */
export type RolloutStates = { states(): Iterable<readonly [module: string, state: RolloutStateName]> };

/** The registry `/metrics` serves, and the hooks that feed it. */
export class SeatFigures {
  /** What the endpoint serves. */
  readonly registry = new Registry();
  readonly #reports = new ReportTally();
  readonly #ready = new Gauge({ ...FIGURES.seatReady, registers: [this.registry] });
  #rollouts: RolloutStates | undefined;
  #liveness: NodesByLiveness = LIVENESS_NOT_KEPT;

  /** The hooks handed to the seat. */
  readonly observer: SeatObserver;

  constructor() {
    const registers = [this.registry];
    const requests = new Counter({ ...FIGURES.verbRequests, labelNames: ['what'], registers });
    const busy = new Counter({ ...FIGURES.verbBusy, registers });
    const writes = new Counter({ ...FIGURES.planWrites, labelNames: ['op', 'result'], registers });
    this.observer = {
      verb: { request: (what) => requests.inc({ what }), busy: () => busy.inc() },
      planWritten: (op, ok) => writes.inc({ op, result: ok ? 'ok' : 'error' }),
      report: (key, value) => this.#reports.see(key, value),
    };
    this.#ready.set(0);
    this.#gauges(registers);
    collectDefaultMetrics({ register: this.registry, prefix: METRIC_PREFIX });
  }

  /** The seat serves: its rollouts are read from now on. */
  seatReady(rollouts: RolloutStates): void {
    this.#rollouts = rollouts;
    this.#ready.set(1);
  }

  /** Where the nodes' liveness is read from (the seat's liveness memory, once it keeps one). */
  readLivenessFrom(source: NodesByLiveness): void {
    this.#liveness = source;
  }

  #gauges(registers: Registry[]): void {
    const figures = this;
    new Gauge({
      ...FIGURES.nodes,
      labelNames: ['liveness'],
      registers,
      collect() {
        this.reset();
        const counts = figures.#liveness.counts();
        if (!counts) return;
        this.set({ liveness: 'alive' }, counts.alive);
        this.set({ liveness: 'silent' }, counts.silent);
        this.set({ liveness: 'engine_down' }, counts.engineDown);
      },
    });
    new Gauge({
      ...FIGURES.modules,
      labelNames: ['state'],
      registers,
      collect() {
        for (const state of REPORT_STATES) this.set({ state }, figures.#reports.inState(state));
      },
    });
    new Gauge({
      ...FIGURES.reportsOutOfShape,
      registers,
      collect() {
        this.set(figures.#reports.outOfShape());
      },
    });
    new Gauge({
      ...FIGURES.driftRestores,
      registers,
      collect() {
        this.set(figures.#reports.restores());
      },
    });
    this.#rolloutGauges(registers);
  }

  #rolloutGauges(registers: Registry[]): void {
    const figures = this;
    new Gauge({
      ...FIGURES.rollouts,
      labelNames: ['state'],
      registers,
      collect() {
        const counts = new Map<string, number>(Object.values(ROLLOUT_STATES).map((s) => [s, 0]));
        for (const [, state] of figures.#rollouts?.states() ?? []) counts.set(state, counts.get(state)! + 1);
        for (const [state, count] of counts) this.set({ state }, count);
      },
    });
    new Gauge({
      ...FIGURES.rolloutState,
      labelNames: ['module', 'state'],
      registers,
      collect() {
        // Reset first: a module whose rollout moved on keeps no series of its former state.
        this.reset();
        for (const [module, state] of figures.#rollouts?.states() ?? []) this.set({ module, state }, 1);
      },
    });
  }
}
