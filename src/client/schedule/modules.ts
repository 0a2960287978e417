// One module's run (DESIGN §7 points 1–5, 10–12): templates → fill → engine → needs and report.
import { PLANS } from '../../shared/contract/buckets.ts';
import { keyDisagreement, nodeModuleKey } from '../../shared/contract/keys.ts';
import { decodeJson } from '../../shared/contract/decode.ts';
import { PlanSchema, type Plan } from '../../shared/contract/plan.ts';
import type { DependencyIndex } from './dependencies.ts';
import { FillMemo, fillModule } from '../fill/fill.ts';
import type { Handoff } from '../handoff/handoff.ts';
import type { ItemWriter } from '../report/items.ts';
import { failedReport, filledReport, type Reporter, type ReportBody } from '../report/reporter.ts';
import type { FillLookup } from '../sources/source.ts';
import type { TemplateCache } from '../fill/templates.ts';

/** What the client keeps of a module between runs; its values are read again from the sources. */
type ModuleState = {
  plan?: Plan;
  /** Why the stored plan does not validate. */
  planError?: string;
  build: string;
  /** The plan was deleted: the next run removes the module. */
  removed: boolean;
  /** What the last fill rendered, so an unchanged file is not rendered or hashed again. */
  memo: FillMemo;
  /** A full run (start, reconnect, knock) was held for a value not read yet: the run its read sets off is full. */
  fullHeld?: boolean;
};

/** A module's writes after its runs: the ones running and waiting, in order. */
type WriteSlot = { running: Promise<void>; queue: { write: () => Promise<void>; removal: boolean }[] };

/** What a module run needs, handed in. */
export type ModulesDeps = {
  node: string;
  templates: TemplateCache;
  /** A placeholder's value for a plan, with the dependency key it read (the node's sources). */
  sources: FillLookup;
  /** Which module named which value, kept current by every run. */
  index: DependencyIndex;
  handoff: Handoff;
  reporter: Pick<Reporter, 'needs' | 'report' | 'removed'>;
  /** Where the module's items are recorded. */
  items: Pick<ItemWriter, 'record' | 'removed'>;
};

/** The modules placed on this node and how each one is run. */
export class Modules {
  readonly #states = new Map<string, ModuleState>();
  /** Each module's writes after its runs: the one running and the latest asked for meanwhile. */
  readonly #writes = new Map<string, WriteSlot>();

  constructor(
    private readonly deps: ModulesDeps,
    private readonly onError: (module: string, err: unknown) => void = () => {},
  ) {}

  /** The modules with a plan. */
  names(): string[] {
    return [...this.#states].filter(([, s]) => !s.removed).map(([name]) => name);
  }

  /** The valid plans, by module. */
  plans(): Map<string, Plan> {
    return new Map([...this.#states].flatMap(([name, s]) => (s.plan && !s.removed && !s.planError ? [[name, s.plan] as const] : [])));
  }

  /** The module's valid plan, or undefined (no plan, a plan that does not validate, or removed). */
  plan(module: string): Plan | undefined {
    const state = this.#states.get(module);
    return state && !state.removed && !state.planError ? state.plan : undefined;
  }

  /** Every archive digest a plan names. */
  digests(): Set<string> {
    return new Set([...this.plans().values()].map((p) => p.archive.digest));
  }

  /** Takes a plan's new value (null: deleted); says whether the module needs a run. */
  setPlan(module: string, bytes: Uint8Array | null): boolean {
    const state = this.#states.get(module);
    if (bytes === null) {
      if (!state) return false;
      state.removed = true;
      return true;
    }
    const next: ModuleState = state && !state.removed ? state : { build: '', removed: false, memo: new FillMemo() };
    const key = nodeModuleKey(this.deps.node, module);
    const decoded = decodeJson(PlanSchema, bytes);
    const disagreement = decoded.ok ? keyDisagreement({ node: this.deps.node, module }, decoded.value) : undefined;
    if (!decoded.ok || disagreement) {
      next.planError = `${PLANS} ${key}: ${decoded.ok ? disagreement : decoded.reason}`;
    } else {
      next.planError = undefined;
      next.plan = decoded.value;
      next.build = decoded.value.build;
    }
    this.#states.set(module, next);
    return true;
  }

  /**
   * Runs one module: removal, or a fill of its changed files (every file when `full`). The run ends
   * once the engine answered; the needs, items and report it leaves are written after, in order per
   * module (see `settled`), so the next change of the module does not wait for the bus's acks.
   */
  async run(module: string, full: boolean): Promise<void> {
    const { reporter, index, handoff } = this.deps;
    const state = this.#states.get(module);
    if (!state) return;
    if (state.removed) {
      this.#states.delete(module);
      index.forget(module);
      handoff.forget(module);
      return this.#later(
        module,
        async () => {
          await this.deps.items.removed(module);
          await reporter.removed(module, state.build);
        },
        true,
      );
    }
    if (state.planError || !state.plan) return this.#report(module, failedReport(state.build, state.planError ?? 'no plan'));
    const plan = state.plan;
    const templates = await this.deps.templates.get(plan.archive.ref, plan.archive.digest);
    if (this.#states.get(module) !== state || state.plan !== plan) return; // superseded: a newer run is scheduled
    if (!templates.ok) return this.#report(module, failedReport(plan.build, templates.reason));

    const filled = fillModule(plan, templates.value, this.deps.sources, state.memo);
    // In the same turn as the values were read, so a change after this is seen by the index; a failed
    // fill's keys too, so a change of the value that failed it fills the module again.
    index.set(module, filled.dependencies);
    if (!filled.ok) return this.#report(module, failedReport(plan.build, filled.reason));
    // A value not read yet is never reported waited for (DESIGN §7 point 4): its read, told, fills the module again.
    if (filled.value.unread) {
      if (full) state.fullHeld = true;
      return;
    }
    const { files, items, waiting, needs, notes, marks, from } = filled.value;
    const whole = full || state.fullHeld === true;
    state.fullHeld = false;

    const handed = await handoff.send(plan, files, whole, marks, from);
    const report =
      handed.kind === 'failed'
        ? failedReport(plan.build, handed.reason)
        : filledReport(plan.build, handoff.results(module, files), waiting, handed.kind === 'unconfirmed' ? handed.reason : undefined, notes);
    this.#later(module, async () => {
      await reporter.needs(module, needs);
      // Items only when nothing waits: a module still waiting keeps its last items (DESIGN §7 point 6).
      if (waiting.length === 0) await this.deps.items.record(module, items);
      await reporter.report(module, report);
    });
  }

  /**
   * Takes a module off the node whose plan went while this client was down (it knows the module from
   * its stored needs): its needs go, `removed` is published, its report goes. Build unknown: `''`.
   * In order with the module's own writes, so a plan that comes back at once writes after it.
   */
  removeStale(module: string): void {
    this.#later(module, () => this.deps.reporter.removed(module, ''), true);
  }

  /** Resolves once every module's needs, items and reports asked for so far are written. */
  async settled(): Promise<void> {
    while (this.#writes.size > 0) await Promise.all([...this.#writes.values()].map((w) => w.running));
  }

  #report(module: string, body: ReportBody): void {
    this.#later(module, () => this.deps.reporter.report(module, body));
  }

  /**
   * Runs a module's writes after those asked for before. While some run, a state write replaces
   * the state write still waiting behind it (each says the module's whole state, so the one between
   * would be overwritten anyway); a removal is never replaced.
   */
  #later(module: string, write: () => Promise<void>, removal = false): void {
    const slot = this.#writes.get(module);
    if (slot) {
      const last = slot.queue.at(-1);
      if (last && !last.removal && !removal) last.write = write;
      else slot.queue.push({ write, removal });
      return;
    }
    const self: WriteSlot = { running: Promise.resolve(), queue: [{ write, removal }] };
    this.#writes.set(module, self);
    self.running = (async () => {
      for (let next = self.queue.shift(); next; next = self.queue.shift()) {
        await next.write().catch((err: unknown) => this.onError(module, err));
      }
      this.#writes.delete(module);
    })();
  }
}
