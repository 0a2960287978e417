// Writes what a node's modules need and how they stand (DESIGN §7 points 2, 11, 12): only what differs.
import { appliedSubject } from '../../shared/contract/subjects.ts';
import type { NatsConnection } from '@nats-io/transport-node';
import { APPLIED, NEEDS } from '../../shared/contract/buckets.ts';
import { jsonBytes, sameBytes } from '../../shared/base/bytes.ts';
import { needKey, nodeModuleKey } from '../../shared/contract/keys.ts';
import type { Logger } from '../../shared/cli/log.ts';
import type { Need } from '../../shared/contract/need.ts';
import type { Report } from '../../shared/contract/report.ts';
import type { NeedEntry, Waiting } from '../fill/fill.ts';
import type { FileResult } from '../handoff/handoff.ts';
import { KeyRetry, type KeyRetryOptions } from './key-retry.ts';
import { fitReport, MAX_CUT_FIELD_CHARS } from './fit.ts';
import { fittedBytes, sameEntries, UTF8, withTime } from './report-bytes.ts';
import { errorText } from '../../shared/base/errors.ts';

/** The max payload assumed when the connection has not said its own (the nats-server default). */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;
/** Bytes a value leaves free under the max payload for the subject and headers. */
const PAYLOAD_HEADROOM = 1024;
/** The longest log line a report's reason makes. */
const MAX_LOG_REASON_CHARS = 2000;

/** A report without its node, module and time, as a module's run builds it. */
export type ReportBody = Omit<Report, 'node' | 'module' | 'at'>;

/**
 * The report of a filled module (DESIGN §7 point 11, §9): `applied` only when no value waits and
 * the engine confirmed every file; else `waiting`, the reason saying what the engine refused or
 * has not confirmed (or `because`, why the handoff was given up) and that a knock sends it again.
 * `notes` (what a source left out of a value) are said in the reason whatever the state.
 */
export function filledReport(build: string, files: FileResult[], waiting: Waiting[], because?: string, notes: readonly string[] = []): ReportBody {
  const refused = files.filter((f) => f.action === 'refused');
  const unconfirmed = files.filter((f) => f.action === 'pending');
  const knock = [
    ...(because !== undefined ? [because] : []),
    ...(refused.length > 0 ? [`engine refused ${refused.map((f) => `${f.path} (${f.reason ?? 'no reason'})`).join(', ')}`] : []),
    ...(because === undefined && unconfirmed.length > 0 ? [`engine has not confirmed ${unconfirmed.map((f) => f.path).join(', ')}`] : []),
  ];
  const reasons = [...notes, ...(knock.length > 0 ? [`${knock.join('; ')}; waiting for a knock (the engine starting, or its socket touched)`] : [])];
  // A file the engine left as it is (changed on disk again and again, DESIGN §14) fails the module with the engine's reason.
  const left = files.filter((f) => f.action === 'left');
  if (left.length > 0) reasons.unshift(...left.map((f) => `${f.path}: ${f.reason ?? 'left as it is by the engine'}`));
  const state = left.length > 0 ? 'failed' : waiting.length > 0 || knock.length > 0 ? 'waiting' : 'applied';
  return { build, state, files, waiting, ...(reasons.length > 0 ? { reason: reasons.join('; ') } : {}) };
}

/** The report of a module that failed: no file, the reason. */
export function failedReport(build: string, reason: string): ReportBody {
  return { build, state: 'failed', files: [], waiting: [], reason };
}

/** How the reporter writes a bucket's keys (keys already in the bucket's shape). */
export type KeyWriter = { put(key: string, value: Uint8Array): Promise<unknown>; delete(key: string): Promise<unknown> };

/**
 * Where a node's client records needs and reports. A write the bus refuses or does not acknowledge
 * is tried again in the background until it lands or a newer write of its key replaces it
 * (client/report/key-retry.ts), so what the reporter holds as written is what the bucket ends up holding.
 */
export class Reporter {
  /** The needs asked per module: key → bytes. */
  readonly #needs = new Map<string, Map<string, Uint8Array>>();
  /** The entries the needs were last built from per module, and the limit they were fitted to. */
  readonly #lastEntries = new Map<string, { entries: readonly NeedEntry[]; maxBytes: number }>();
  /** The last report asked per module, its JSON without `at`. */
  readonly #reports = new Map<string, string>();
  readonly #retry: KeyRetry;

  constructor(
    private readonly nc: NatsConnection,
    private readonly node: string,
    private readonly needsKv: KeyWriter,
    private readonly appliedKv: KeyWriter,
    private readonly log: Logger,
    private readonly clock: () => Date = () => new Date(),
    retry: KeyRetryOptions = {},
  ) {
    this.#retry = new KeyRetry(log, retry);
  }

  /** Writes whose tries have not landed yet. */
  get retrying(): number {
    return this.#retry.waiting;
  }

  /** Drops the retries of writes that have not landed (the client stops). */
  close(): void {
    this.#retry.close();
  }

  /** Records the module's needs: puts those that differ, deletes those it no longer names. */
  async needs(module: string, entries: NeedEntry[]): Promise<void> {
    // The same entries make the same bytes, all written already (or being tried again): a change of
    // one value of a module names the same needs, so most runs stop here, building nothing.
    const maxBytes = this.#maxBytes();
    const last = this.#lastEntries.get(module);
    if (last && last.maxBytes === maxBytes && sameEntries(last.entries, entries)) return;
    this.#lastEntries.set(module, { entries, maxBytes });
    const before = this.#needs.get(module) ?? new Map<string, Uint8Array>();
    const after = new Map<string, Uint8Array>();
    for (const e of entries) {
      const value: Need = { node: this.node, module, kind: e.kind, name: e.name, files: e.files, met: e.met };
      after.set(needKey(this.node, module, e.kind, e.name), fittedBytes(value, maxBytes, fitNeed));
    }
    this.#needs.set(module, after);
    // Together: a module's needs are separate keys, and one flush to the bus carries them all.
    await Promise.all([
      ...[...after]
        .filter(([key, bytes]) => !sameBytes(before.get(key), bytes))
        .map(([key, bytes]) => this.#retry.write(`${NEEDS} ${key}`, () => this.needsKv.put(key, bytes))),
      ...[...before.keys()].filter((key) => !after.has(key)).map((key) => this.#retry.write(`${NEEDS} ${key}`, () => this.needsKv.delete(key))),
    ]);
  }

  /**
   * Takes needs read from the bucket (key → bytes, left from before a restart) as written for
   * `module`, so its next fill puts only those that differ and deletes those it no longer names.
   * What this client wrote since it started wins over what was read.
   */
  known(module: string, stored: ReadonlyMap<string, Uint8Array>): void {
    this.#lastEntries.delete(module);
    this.#needs.set(module, new Map([...stored, ...(this.#needs.get(module) ?? [])]));
  }

  /** Writes and publishes the module's report when it differs from the last one (the time aside). */
  async report(module: string, body: ReportBody): Promise<void> {
    const key = nodeModuleKey(this.node, module);
    // One JSON text a report: compared without its time, written with it (see withTime).
    const comparable = JSON.stringify({ node: this.node, module, ...body });
    if (this.#reports.get(module) === comparable) return;
    this.#reports.set(module, comparable);
    const at = this.clock().toISOString();
    const full: Report = { node: this.node, module, ...body, at };
    // Encoded once: its length is the size the limit is about.
    const encoded = UTF8.encode(withTime(comparable, at));
    const maxBytes = this.#maxBytes();
    const fits = encoded.length <= maxBytes;
    const report = fits ? full : fitReport(full, maxBytes);
    const bytes = fits ? encoded : UTF8.encode(JSON.stringify(report));
    this.#publish(module, bytes);
    await this.#retry.write(`${APPLIED} ${key}`, () => this.appliedKv.put(key, bytes));
    const line = reportLine(key, report);
    if (report.state === 'failed') this.log.error(line);
    // A file the engine refused waits on the node's declaration: what needs a look (README, log priorities).
    else if (report.files.some((f) => f.action === 'refused')) this.log.warn(line);
    else this.log.info(line);
  }

  /** Publishes a report on `prov.applied.<node>.<module>`; a publish that throws (the connection closed) is said, not thrown. */
  #publish(module: string, bytes: Uint8Array): void {
    try {
      this.nc.publish(appliedSubject(this.node, module), bytes);
    } catch (err) {
      this.log.error(`${appliedSubject(this.node, module)}: ${errorText(err)}`);
    }
  }

  /** The most bytes one value may have on this connection. */
  #maxBytes(): number {
    return (this.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD) - PAYLOAD_HEADROOM;
  }

  /** A module taken off the node: its needs go, `removed` is published, then its report goes. */
  async removed(module: string, build: string): Promise<void> {
    await this.needs(module, []);
    this.#needs.delete(module);
    this.#lastEntries.delete(module);
    const report: Report = { node: this.node, module, build, state: 'removed', files: [], waiting: [], at: this.clock().toISOString() };
    const bytes = jsonBytes(fitReport(report, this.#maxBytes()));
    const key = nodeModuleKey(this.node, module);
    this.#reports.delete(module);
    this.#publish(module, bytes);
    // A watcher of the bucket sees `removed` too, then the key goes; a delete replaces a put still failing.
    await this.#retry.write(`${APPLIED} ${key}`, () => this.appliedKv.put(key, bytes));
    await this.#retry.write(`${APPLIED} ${key}`, () => this.appliedKv.delete(key));
    this.log.info(`${this.node}.${module}: removed`);
  }
}

/** Waited values a report's log line names at most; past that it counts them. */
const MAX_LOGGED_WAITS = 5;

/** A report as one log line: `n1.web: waiting for config:db.host, port:http (reason)`, the reason cut short. */
function reportLine(key: string, report: Report): string {
  const reason = report.reason && report.reason.length > MAX_LOG_REASON_CHARS ? `${report.reason.slice(0, MAX_LOG_REASON_CHARS)}…` : report.reason;
  const waits = report.waiting.slice(0, MAX_LOGGED_WAITS).map((w) => `${w.kind}:${w.name}`);
  if (report.waiting.length > MAX_LOGGED_WAITS) waits.push(`${report.waiting.length - MAX_LOGGED_WAITS} more`);
  const waiting = report.state === 'waiting' && waits.length > 0 ? ` for ${waits.join(', ')}` : '';
  return `${key}: ${report.state}${waiting}${reason ? ` (${reason})` : ''}`;
}

/** A need whose JSON fits in `maxBytes`: long paths shortened, then trailing files left out. */
export function fitNeed(need: Need, maxBytes: number): Need {
  const size = (n: Need) => Buffer.byteLength(JSON.stringify(n));
  if (size(need) <= maxBytes) return need;
  const fitted = { ...need, files: need.files.map((f) => (f.length > MAX_CUT_FIELD_CHARS ? `${f.slice(0, MAX_CUT_FIELD_CHARS)}…` : f)) };
  while (size(fitted) > maxBytes && fitted.files.length > 0) fitted.files.pop();
  return fitted;
}
