// The composition passes of DESIGN §4: a load gate, then one coalesced pass per input change.
import { sameBytes, jsonBytes } from '../shared/bus.ts';
import { keyDisagreement, parseModuleKey, parseNodeModuleKey } from '../shared/keys.ts';
import type { Parsed } from '../shared/result.ts';
import { MAX_PLAN_BYTES } from '../shared/limits.ts';
import type { Logger } from '../shared/log.ts';
import { AssignmentSchema, CompositionSchema, decodeJson, type Composition, type Health } from '../shared/schemas.ts';
import { composePlan } from './compose.ts';

type Compositions = Map<string, Parsed<Composition>>;

/** A module held for more passes in a row than this is said on `provisioner_health`. */
export const HELD_PASSES_BEFORE_HEALTH = 2;

/** Where a pass writes and says things: the plans bucket and the health subject, handed in. */
export type ComposerSink = {
  putPlan(key: string, value: Uint8Array): Promise<void>;
  deletePlan(key: string): Promise<void>;
  health(line: Health): void;
};

/** The input a composer is fed: each bucket's current values, as watches deliver them. */
export type InputName = 'assignments' | 'modules' | 'plans';

/** What one pass did, for logs and tests. */
export type PassSummary = { pass: number; written: string[]; retired: string[]; held: string[]; failed: string[] };

/** Runs passes over the current inputs; never on a timer, only when an input changes after the load gate. */
export class Composer {
  readonly #inputs: Record<InputName, Map<string, Uint8Array>> = { assignments: new Map(), modules: new Map(), plans: new Map() };
  readonly #loaded = new Set<InputName>();
  readonly #heldPasses = new Map<string, number>();
  readonly #said = new Map<string, Uint8Array>();
  #passes = 0;
  #running: Promise<void> | undefined;
  #dirty = false;

  constructor(
    private readonly sink: ComposerSink,
    private readonly log: Logger,
    private readonly onPass: (summary: PassSummary) => void = () => {},
  ) {}

  /** Records a key's current value (null: deleted) and, past the load gate, asks for a pass. */
  update(input: InputName, key: string, value: Uint8Array | null): void {
    const map = this.#inputs[input];
    if (value === null) map.delete(key);
    else map.set(key, value);
    // A plan echoed back is our own write (or an operator's): it is state, not a reason to compose.
    if (input !== 'plans') this.#request();
  }

  /** Marks an input's first full read done; the first pass runs once all three are. */
  loaded(input: InputName): void {
    this.#loaded.add(input);
    this.#request();
  }

  /** Resolves when no pass is running or asked for. */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  #request(): void {
    if (this.#loaded.size < 3) return;
    this.#dirty = true;
    if (this.#running) return;
    this.#running = (async () => {
      // Coalesce: changes that arrive while a pass runs are folded into one more pass.
      await Promise.resolve();
      while (this.#dirty) {
        this.#dirty = false;
        try {
          await this.#pass();
        } catch (err) {
          // Per-key work is guarded below; this is the last net, so a pass never kills the seat.
          this.log.error(`pass ${this.#passes} ended early: ${describe(err)}`);
        }
      }
    })().finally(() => (this.#running = undefined));
  }

  async #pass(): Promise<void> {
    const summary: PassSummary = { pass: ++this.#passes, written: [], retired: [], held: [], failed: [] };
    const compositions = this.#compositions(summary.pass);
    const heldNow = new Set<string>();
    const assigned = new Set<string>();

    for (const [key, bytes] of [...this.#inputs.assignments].sort(byKey)) {
      try {
        await this.#composeKey(summary, key, bytes, compositions, heldNow, assigned);
      } catch (err) {
        // One key's exception is said with the key and the pass goes on; its stored plan stays. It is
        // said once per reason: the bytes that led to it are not to be trusted even for a comparison.
        if (parseNodeModuleKey(key).ok) assigned.add(key);
        const reason = `mesh-controller_assignments ${clip(key)}: internal error: ${describe(err)}`;
        this.#fail(summary, key, jsonBytes(reason), { ...subjectOf(key), build: '', reason });
      }
    }

    for (const key of [...this.#inputs.plans.keys()].sort()) {
      if (assigned.has(key) || !parseNodeModuleKey(key).ok) continue;
      await this.#write(summary, key, () => this.sink.deletePlan(key), null);
    }

    this.#sayHeld(heldNow, compositions);
    this.#forgetGone();
    this.log.debug(`pass ${summary.pass}: ${summary.written.length} written, ${summary.retired.length} retired, ${summary.held.length} held, ${summary.failed.length} failed`);
    try {
      this.onPass(summary);
    } catch (err) {
      this.log.error(`pass ${summary.pass}: onPass: ${describe(err)}`);
    }
  }

  /** Decodes one assignment, composes its plan and writes it when it differs; records the key as assigned or held. */
  async #composeKey(summary: PassSummary, key: string, bytes: Uint8Array, compositions: Compositions, heldNow: Set<string>, assigned: Set<string>): Promise<void> {
    const id = parseNodeModuleKey(key);
    const decoded = decodeJson(AssignmentSchema, bytes);
    const reason = !id.ok ? `key out of shape: ${id.reason}` : !decoded.ok ? decoded.reason
      : keyDisagreement(id.value, decoded.value);
    if (reason !== undefined || !id.ok || !decoded.ok) {
      // Nothing is lost on bad input: a stored plan of this key stays until the assignment is good or gone.
      if (id.ok) assigned.add(key);
      this.#fail(summary, key, bytes, { ...subjectOf(key), build: '', reason: `mesh-controller_assignments ${clip(key)}: ${reason}` });
      return;
    }
    assigned.add(key);
    const assignment = decoded.value;
    const composition = compositions.get(assignment.module);
    if (!composition?.ok || !composition.value.published) {
      heldNow.add(assignment.module);
      summary.held.push(key);
      return;
    }
    const plan = composePlan(assignment, composition.value);
    if (!plan.ok) {
      this.#fail(summary, key, concat(bytes, composed(composition.value)), { module: assignment.module, node: assignment.node, build: composition.value.build, reason: `plan ${key}: ${plan.reason}` });
      return;
    }
    const bytesWanted = jsonBytes(plan.value);
    if (bytesWanted.length > MAX_PLAN_BYTES) {
      // A plan past the limit is one the bus or the client would refuse: refused here, with its size.
      const reason = `plan ${key}: ${bytesWanted.length} bytes, past the limit of ${MAX_PLAN_BYTES} bytes`;
      this.#fail(summary, key, concat(bytes, composed(composition.value)), { module: assignment.module, node: assignment.node, build: composition.value.build, reason });
      return;
    }
    this.#said.delete(`assignments ${key}`);
    if (sameBytes(this.#inputs.plans.get(key), bytesWanted)) return;
    await this.#write(summary, key, () => this.sink.putPlan(key, bytesWanted), bytesWanted);
  }

  #compositions(pass: number): Compositions {
    const out: Compositions = new Map();
    for (const [key, bytes] of this.#inputs.modules) {
      const id = parseModuleKey(key);
      let decoded: Parsed<Composition>;
      try {
        decoded = decodeJson(CompositionSchema, bytes);
        if (decoded.ok && decoded.value.module !== key) decoded = { ok: false, reason: `field "module" names ${decoded.value.module}` };
      } catch (err) {
        decoded = { ok: false, reason: `internal error: ${describe(err)}` };
      }
      if (!id.ok || !decoded.ok) {
        const reason = !id.ok ? `key out of shape: ${id.reason}` : !decoded.ok ? decoded.reason : '';
        this.#sayOnce(`modules ${key}`, bytes, { module: clip(key), build: '', reason: `mesh-catalog_modules ${clip(key)}: ${reason}; its plans are held`, passes: pass });
      } else {
        this.#said.delete(`modules ${key}`);
      }
      if (id.ok) out.set(key, decoded);
    }
    return out;
  }

  /** Says a bad input once per distinct value: passes re-run on every change, the line need not. */
  #sayOnce(id: string, bytes: Uint8Array, line: Health): void {
    if (sameBytes(this.#said.get(id), bytes)) return;
    this.#said.set(id, bytes);
    this.log.error(line.reason);
    this.#health(line);
  }

  /** Forgets what was said of keys that are gone, so garbage written and deleted does not pile up. */
  #forgetGone(): void {
    for (const id of this.#said.keys()) {
      const space = id.indexOf(' ');
      const input = id.slice(0, space) as InputName;
      if (!this.#inputs[input].has(id.slice(space + 1))) this.#said.delete(id);
    }
  }

  /** Publishes a health line; a bus that refuses it is logged, never allowed to stop the pass. */
  #health(line: Health): void {
    try {
      this.sink.health(line);
    } catch (err) {
      this.log.error(`provisioner_health: could not say "${line.reason}": ${describe(err)}`);
    }
  }

  async #write(summary: PassSummary, key: string, op: () => Promise<void>, value: Uint8Array | null): Promise<void> {
    try {
      await op();
      if (value) this.#inputs.plans.set(key, value);
      else this.#inputs.plans.delete(key);
      (value ? summary.written : summary.retired).push(key);
    } catch (err) {
      // A write the bus refused is tried again on the next pass; the others go on.
      this.log.error(`mesh-provisioner_plans ${key}: ${value ? 'put' : 'delete'} failed: ${describe(err)}`);
      summary.failed.push(key);
    }
  }

  #fail(summary: PassSummary, key: string, bytes: Uint8Array, line: Omit<Health, 'passes'>): void {
    summary.failed.push(key);
    this.#sayOnce(`assignments ${key}`, bytes, { ...line, passes: summary.pass });
  }

  #sayHeld(heldNow: Set<string>, compositions: Compositions): void {
    for (const module of this.#heldPasses.keys()) if (!heldNow.has(module)) this.#heldPasses.delete(module);
    for (const module of heldNow) {
      const passes = (this.#heldPasses.get(module) ?? 0) + 1;
      this.#heldPasses.set(module, passes);
      if (passes <= HELD_PASSES_BEFORE_HEALTH) continue;
      const c = compositions.get(module);
      const reason = !c ? 'composition missing' : !c.ok ? `composition does not validate: ${c.reason}` : 'composition not published';
      const build = c?.ok ? c.value.build : '';
      this.log.warn(`module ${module} held for ${passes} passes: ${reason} (build ${build || 'unknown'})`);
      this.#health({ module, build, reason: `held: ${reason}`, passes });
    }
  }
}

function composed(c: Composition): Uint8Array {
  return jsonBytes(c);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function byKey(a: [string, unknown], b: [string, unknown]): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
}

/** The module and node a health line of an assignment key names: the key's own parts when it has them. */
function subjectOf(key: string): { module: string; node?: string } {
  const id = parseNodeModuleKey(key);
  return id.ok ? { module: id.value.module, node: id.value.node } : { module: clip(key) };
}

/** A key as a line quotes it: a hostile key of a kilobyte need not be repeated whole. */
function clip(key: string): string {
  return key.length <= 300 ? key : `${key.slice(0, 300)}…`;
}

/** Whatever was thrown, as one line. */
function describe(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
