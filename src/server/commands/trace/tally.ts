// What `trace` makes of the fleet's reports (pure, DESIGN §14): over the keys a pattern matched,
// which nodes' files use one of them, on how many the newest revision is in place, and each node
// behind with its report's state and reason. Fed one report at a time; memory is one line per node.
import { compareKeys } from '../../../shared/contract/keys.ts';
import type { Report } from '../../../shared/contract/report.ts';
import type { Newest } from '../why/judge.ts';
import { kindReadsBucket } from '../why/input-place.ts';

/** A node whose files do not hold the newest revision of a matched key: the first such input, and its report's state and reason. */
export type BehindNode = {
  node: string;
  module: string;
  /** A file holding it. */
  path: string;
  key: string;
  /** The revision the file holds. */
  rev?: number;
  /** The bus's newest revision of the key. */
  newest: number;
  /** Whether the key was deleted or purged since. */
  gone: boolean;
  /** The inputs behind on this node, over all its files and modules. */
  behind: number;
  state: Report['state'];
  reason?: string;
};

/** What `trace --json` prints (and the table is made from). */
export type TraceView = {
  bucket: string;
  pattern: string;
  /** Keys matched, and of those the ones deleted or purged. */
  keys: number;
  deleted: number;
  /** The newest revision among the keys matched, and its time. */
  newest?: { key: string; rev: number; at: string };
  /** Nodes whose files use a matched key, and of those the ones holding every newest revision. */
  nodes: number;
  current: number;
  behind: BehindNode[];
  /** Reports with files that name no inputs at all (a client before DESIGN §14): not judged. */
  withoutFrom: number;
};

/** The fleet's reports tallied against the keys a pattern matched. */
export class TraceTally {
  readonly #users = new Map<string, BehindNode | null>();
  #withoutFrom = 0;

  constructor(
    private readonly bucket: string,
    private readonly matched: ReadonlyMap<string, Newest>,
  ) {}

  /** Takes one report: its node uses the keys its files name, current unless one is behind. */
  addReport(report: Report): void {
    if (report.state === 'removed') return;
    if (report.files.length > 0 && report.files.every((f) => f.from === undefined)) this.#withoutFrom += 1;
    for (const file of report.files)
      for (const input of file.from ?? []) {
        if (!('kind' in input) || !kindReadsBucket(input.kind, this.bucket)) continue;
        const newest = this.matched.get(input.key);
        if (newest === undefined) continue;
        const had = this.#users.get(report.node);
        if (input.rev === newest.rev && newest.op === 'PUT') {
          if (had === undefined) this.#users.set(report.node, null);
          continue;
        }
        if (had) had.behind += 1;
        else {
          const behind: BehindNode = {
            node: report.node,
            module: report.module,
            path: file.path,
            key: input.key,
            newest: newest.rev,
            gone: newest.op !== 'PUT',
            behind: 1,
            state: report.state,
          };
          if (input.rev !== undefined) behind.rev = input.rev;
          if (report.reason !== undefined) behind.reason = report.reason;
          this.#users.set(report.node, behind);
        }
      }
  }

  /** The view of everything taken. */
  view(pattern: string): TraceView {
    const behind = [...this.#users.values()].filter((b): b is BehindNode => b !== null).sort((a, b) => compareKeys(a.node, b.node));
    let newest: TraceView['newest'];
    let deleted = 0;
    for (const [key, n] of this.matched) {
      if (n.op !== 'PUT') deleted += 1;
      if (!newest || n.rev > newest.rev) newest = { key, rev: n.rev, at: n.at };
    }
    return {
      bucket: this.bucket,
      pattern,
      keys: this.matched.size,
      deleted,
      ...(newest ? { newest } : {}),
      nodes: this.#users.size,
      current: this.#users.size - behind.length,
      behind,
      withoutFrom: this.#withoutFrom,
    };
  }
}
