// Handing a module's filled files to the engine (DESIGN §9): only what changed since the engine
// last confirmed it, one request per module, and what the engine said of each file.
import { unconfirmedPaths, unconfirmedReason, type FillFile, type FillResult } from '../../shared/contract/fill-protocol.ts';
import { MAX_ENGINE_LINE_BYTES } from '../../shared/contract/limits.ts';
import type { Logger } from '../../shared/cli/log.ts';
import type { Plan } from '../../shared/contract/plan.ts';
import type { From, Report } from '../../shared/contract/report.ts';
import { EngineProtocolError, EngineTimeout, EngineUnavailable } from './engine-errors.ts';
import type { EngineClient } from './fill-socket.ts';

/** One file of a report: its path, what the engine did, the digest handed. */
export type FileResult = Report['files'][number];

/**
 * How a handoff ended: confirmed, not confirmed (given up, the engine away, or files the reply left
 * out: the module waits for a knock), or refused whole.
 */
export type HandoffOutcome = { kind: 'confirmed' } | { kind: 'unconfirmed'; reason: string } | { kind: 'failed'; reason: string };

/** The actions that confirm a file's content on disk: its `from` is then the fill's (DESIGN §14). */
const CONFIRMING = new Set(['written', 'unchanged', 'restored']);

/** Room left under the engine's line limit for the request's JSON besides the contents. */
const MAX_REQUEST_BYTES = MAX_ENGINE_LINE_BYTES - 1024 * 1024;

type Handed = {
  /** Each file as last confirmed by the engine: path → signature. */
  sent: Map<string, string>;
  /** Each file's last result, with the `from` of the content the engine last confirmed and its drift. */
  results: Map<string, FileResult>;
};

/** What a file's next result keeps of its last: the `from` of what is on disk and its drift. */
function provenance(last: FileResult | undefined): Pick<FileResult, 'from' | 'drift'> {
  if (!last) return {};
  return { ...(last.from ? { from: last.from } : {}), ...(last.drift ? { drift: last.drift } : {}) };
}

/** What the engine was handed and said, per module; forgotten on removal. */
export class Handoff {
  readonly #byModule = new Map<string, Handed>();
  #engineDown = false;

  constructor(
    private readonly engine: EngineClient,
    private readonly log: Logger,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /**
   * Sends the files that changed since the engine confirmed them (every file when `full`); `marks`
   * are the providers' marks of the credentials a file names, a change of which sends it again;
   * `from`, each file's inputs (DESIGN §14), becomes its report's once the engine confirms its content.
   */
  async send(
    plan: Plan,
    files: readonly FillFile[],
    full: boolean,
    marks: ReadonlyMap<string, string> = new Map(),
    from: ReadonlyMap<string, From> = new Map(),
  ): Promise<HandoffOutcome> {
    const handed = this.#handed(plan.module);
    const toSend = files.filter((f) => full || handed.sent.get(f.path) !== signature(f, marks.get(f.path)));
    const carried = new Set(toSend.map((f) => f.path));
    this.#alreadyThere(handed, files, carried, from, false);
    if (toSend.length === 0) return { kind: 'confirmed' };
    const size = requestSize(toSend);
    if (size > MAX_REQUEST_BYTES)
      return { kind: 'failed', reason: `the fill request would be about ${size} bytes, past the engine's line limit of ${MAX_ENGINE_LINE_BYTES} bytes` };
    const secrets = Object.fromEntries(plan.secrets.map((s) => [s.name, s.vault]));
    let reply;
    try {
      reply = await this.engine.fill({ module: plan.module, build: plan.build, files: toSend, secrets });
    } catch (err) {
      // Whatever the engine did not confirm goes again, whole, on its knock, a start or the bus's return.
      handed.sent.clear();
      if (!(err instanceof EngineTimeout || err instanceof EngineProtocolError || err instanceof EngineUnavailable)) throw err;
      for (const f of toSend) handed.results.set(f.path, { path: f.path, action: 'pending', digest: f.digest, ...provenance(handed.results.get(f.path)) });
      if (!(err instanceof EngineUnavailable)) return { kind: 'unconfirmed', reason: err.message };
      // One line per outage, not one per module; each module's report says it (its files are not on disk).
      if (!this.#engineDown) this.log.warn(`engine not reachable (${err.message}); waiting for its knock`);
      this.#engineDown = true;
      return { kind: 'unconfirmed', reason: `engine not reachable (${err.message})` };
    }
    if (this.#engineDown) this.log.notice('engine reachable again');
    this.#engineDown = false;
    if (!reply.ok) {
      handed.sent.clear();
      return { kind: 'failed', reason: `engine: ${reply.error}` };
    }
    this.#record(handed, toSend, reply.files, marks, from);
    this.#alreadyThere(handed, files, carried, from, true);
    // A file the reply leaves out goes again with the module's next run (a knock, a start, the bus's
    // return); the connection was kept, so the other modules' requests on it are answered as they come.
    const missing = unconfirmedPaths(
      reply,
      toSend.map((f) => f.path),
    );
    if (missing.length === 0) return { kind: 'confirmed' };
    const left = new Set(missing);
    for (const f of toSend.filter((x) => left.has(x.path))) {
      handed.sent.delete(f.path);
      handed.results.set(f.path, { path: f.path, action: 'pending', digest: f.digest, ...provenance(handed.results.get(f.path)) });
    }
    return { kind: 'unconfirmed', reason: unconfirmedReason(missing) };
  }

  /** What the engine last said of each file (`pending` for a file it has not confirmed). */
  results(module: string, files: readonly FillFile[]): FileResult[] {
    const handed = this.#handed(module);
    return files.map((f) => handed.results.get(f.path) ?? { path: f.path, action: 'pending', digest: f.digest });
  }

  /** Forgets a module: its next handoff sends every file. */
  forget(module: string): void {
    this.#byModule.delete(module);
  }

  /**
   * A file this fill does not carry is as the engine last confirmed it. When that content is
   * confirmed, this fill's inputs are its `from` (the same bytes, read anew). Once the engine has
   * answered this fill (`answered`), its `written` (or `restored`) was an earlier fill's word, and the
   * report of this one would say it wrote a file it did not touch: it reads `unchanged`.
   */
  #alreadyThere(handed: Handed, files: readonly FillFile[], carried: ReadonlySet<string>, from: ReadonlyMap<string, From>, answered: boolean): void {
    for (const f of files) {
      const last = handed.results.get(f.path);
      if (!last || carried.has(f.path) || !CONFIRMING.has(last.action)) continue;
      const inputs = from.get(f.path) ?? last.from;
      const action = answered && last.action !== 'unchanged' ? 'unchanged' : last.action;
      if (action === last.action && inputs === last.from) continue;
      handed.results.set(f.path, { ...last, action, ...(inputs ? { from: inputs } : {}) });
    }
  }

  // The engine client resolves only a reply naming files sent, each at most as often as sent.
  #record(
    handed: Handed,
    toSend: readonly FillFile[],
    results: readonly FillResult[],
    marks: ReadonlyMap<string, string>,
    from: ReadonlyMap<string, From>,
  ): void {
    const byPath = new Map(toSend.map((f) => [f.path, f]));
    for (const result of results) {
      const file = byPath.get(result.path)!;
      const last = handed.results.get(result.path);
      // A confirmed content's inputs are this fill's; any other answer leaves on disk what was there.
      const inputs = CONFIRMING.has(result.action) ? from.get(result.path) : last?.from;
      const drift = result.action === 'restored' ? { count: (last?.drift?.count ?? 0) + 1, last: this.clock().toISOString() } : last?.drift;
      handed.results.set(result.path, {
        path: result.path,
        action: result.action,
        digest: file.digest,
        ...(result.reason ? { reason: result.reason } : {}),
        ...(inputs ? { from: inputs } : {}),
        ...(drift ? { drift } : {}),
      });
      if (result.action === 'refused') handed.sent.delete(result.path);
      else handed.sent.set(result.path, signature(file, marks.get(result.path)));
    }
  }

  #handed(module: string): Handed {
    return this.#byModule.get(module) ?? this.#byModule.set(module, { sent: new Map(), results: new Map() }).get(module)!;
  }
}

/**
 * The bytes of the files' contents and paths as JSON carries them. Counted exactly only when the
 * raw bytes could reach the limit once escaped (JSON writes a control character in six).
 */
function requestSize(files: readonly FillFile[]): number {
  const parts = files.flatMap((f) => [f.path, ...(typeof f.content === 'string' ? [f.content] : f.content.filter((p) => typeof p === 'string'))]);
  const raw = parts.reduce((n, part) => n + Buffer.byteLength(part), 0) + files.length * 256;
  if (raw * 6 < MAX_REQUEST_BYTES) return raw;
  return parts.reduce((n, part) => n + Buffer.byteLength(JSON.stringify(part)), 0) + files.length * 256;
}

/** What makes a file different for the engine: its bytes, how it is written, and the marks of the credentials it names. */
function signature(f: FillFile, mark = ''): string {
  return `${f.digest} ${f.mode} ${f.change} ${f.fileMode ?? ''} ${f.owner ?? ''} ${f.comment ?? ''} ${mark}`;
}
