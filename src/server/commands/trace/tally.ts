// What `trace` makes of the fleet's reports (pure, DESIGN §14): over the keys a pattern matched,
// which nodes' files use one of them, on how many the newest revision is in place, and each node
// behind with its report's state and reason. Fed one report at a time while the keys' revisions are
// still being read, it keeps only the inputs the pattern can match; judged once both are in.
import { compareKeys } from '../../../shared/contract/keys.ts';
import type { Report } from '../../../shared/contract/report.ts';
import type { Newest } from '../why/judge.ts';
import { kindReadsBucket } from '../why/input-place.ts';
import { matchesPattern, type KeyPattern } from './pattern.ts';

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

/** What `trace --json` prints (and the lines are made from). */
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

/** An input a report names that the pattern matches, with what its report says. */
type Use = { node: string; module: string; path: string; key: string; rev?: number; state: Report['state']; reason?: string };

/** The fleet's reports, kept as the inputs a pattern matches, judged against the keys' newest revisions. */
export class TraceTally {
  readonly #uses: Use[] = [];
  #withoutFrom = 0;

  constructor(private readonly target: KeyPattern) {}

  /** Takes one report: keeps each input of its files the pattern can match. */
  addReport(report: Report): void {
    if (report.state === 'removed') return;
    if (report.files.length > 0 && report.files.every((f) => f.from === undefined)) this.#withoutFrom += 1;
    for (const file of report.files)
      for (const input of file.from ?? []) {
        if (!('kind' in input) || !kindReadsBucket(input.kind, this.target.bucket) || !matchesPattern(this.target.pattern, input.key)) continue;
        const use: Use = { node: report.node, module: report.module, path: file.path, key: input.key, state: report.state };
        if (input.rev !== undefined) use.rev = input.rev;
        if (report.reason !== undefined) use.reason = report.reason;
        this.#uses.push(use);
      }
  }

  /** Judges every input kept against `matched` (each key's newest entry): the nodes using one, and those behind. */
  view(matched: ReadonlyMap<string, Newest>): TraceView {
    const nodes = new Map<string, BehindNode | null>();
    for (const use of this.#uses) {
      const newest = matched.get(use.key);
      if (newest === undefined) continue;
      const had = nodes.get(use.node);
      if (use.rev === newest.rev && newest.op === 'PUT') {
        if (had === undefined) nodes.set(use.node, null);
      } else if (had) had.behind += 1;
      else nodes.set(use.node, { ...use, newest: newest.rev, gone: newest.op !== 'PUT', behind: 1 });
    }
    const behind = [...nodes.values()].filter((b): b is BehindNode => b !== null).sort((a, b) => compareKeys(a.node, b.node));
    let newest: TraceView['newest'];
    let deleted = 0;
    for (const [key, n] of matched) {
      if (n.op !== 'PUT') deleted += 1;
      if (!newest || n.rev > newest.rev) newest = { key, rev: n.rev, at: n.at };
    }
    return {
      ...this.target,
      keys: matched.size,
      deleted,
      ...(newest ? { newest } : {}),
      nodes: nodes.size,
      current: nodes.size - behind.length,
      behind,
      withoutFrom: this.#withoutFrom,
    };
  }
}
