// What `why` makes of a module's report (pure, DESIGN §14): each input of each file's `from` set
// against what the bus holds now — current, behind, gone — or shown and not judged (a vault name,
// which keeps no revision on the bus). Keys, revisions, digests and times only: never a value.
import type { Report } from '../../../shared/contract/report.ts';
import { placeOf, type ProvisionsOf } from './input-place.ts';

/** What the bus holds now under a key: its newest revision, and whether that is a write or a delete. */
export type Newest = {
  /** The stream sequence of the key's newest entry. */
  rev: number;
  /** When that entry was written (ISO). */
  at: string;
  /** Whether the key holds a value, or was deleted or purged. */
  op: 'PUT' | 'DEL' | 'PURGE';
};

/** How an input stands. */
export const VERDICTS = ['current', 'behind', 'gone', 'not judged'] as const;
/** How an input stands: current, behind, gone, or not judged (a vault name; inputs a `from` only counts). */
export type Verdict = (typeof VERDICTS)[number];

/** One input of one file, as `why` shows it. */
export type JudgedInput = {
  path: string;
  kind: string;
  key: string;
  /** The bucket the key is read from, when one keeps it. */
  bucket?: string;
  /** The revision the file holds. */
  rev?: number;
  /** The bus's newest revision of the key, and its time. */
  newest?: { rev: number; at: string };
  /** The archive's digest the file holds, and the one the plan names now. */
  digest?: string;
  planDigest?: string;
  verdict: Verdict;
  /** Why, in words, when not plainly current. */
  note?: string;
};

/** What `why` needs besides the report: the plan (absent: none) and a lookup of the bus's newest entry of a bucket's key (null: no entry). */
export type JudgeContext = {
  plan: (ProvisionsOf & { archive: { digest: string }; build: string }) | undefined;
  newest(bucket: string, key: string): Newest | null;
};

/** Every bucket key the report's inputs are read from, so they can be read before judging. */
export function keysToRead(report: Report, plan: ProvisionsOf | undefined, path?: string): { bucket: string; key: string }[] {
  const keys = new Map<string, { bucket: string; key: string }>();
  for (const file of filesOf(report, path))
    for (const input of file.from ?? []) {
      if (!('kind' in input)) continue;
      const place = placeOf(input.kind, input.key, plan);
      if (place.at === 'bucket') keys.set(`${place.bucket}\0${input.key}`, { bucket: place.bucket, key: input.key });
    }
  return [...keys.values()];
}

/** Judges every input of the report's files (or of `path` alone), in the order the report lists them. */
export function judgeReport(report: Report, ctx: JudgeContext, path?: string): JudgedInput[] {
  const judged: JudgedInput[] = [];
  for (const file of filesOf(report, path)) {
    if (file.from === undefined) {
      judged.push({ path: file.path, kind: '', key: '', verdict: 'not judged', note: 'the report names no inputs for this file (a client before DESIGN §14)' });
      continue;
    }
    for (const input of file.from) {
      if ('more' in input)
        judged.push({ path: file.path, kind: '', key: '', verdict: 'not judged', note: `${input.more} more inputs, not listed in the report` });
      else judged.push({ path: file.path, ...judgeInput(input, ctx) });
    }
  }
  return judged;
}

function judgeInput(input: { kind: string; key: string; rev?: number; digest?: string }, ctx: JudgeContext): Omit<JudgedInput, 'path'> {
  const base = { kind: input.kind, key: input.key, ...(input.rev === undefined ? {} : { rev: input.rev }) };
  const place = placeOf(input.kind, input.key, ctx.plan);
  switch (place.at) {
    case 'vault':
      return { ...base, verdict: 'not judged', note: 'a vault name: the vault keeps no revision on the bus' };
    case 'unknown':
      return { ...base, verdict: 'gone', note: place.reason };
    case 'archive': {
      const digest = input.digest ?? '';
      if (!ctx.plan) return { ...base, digest, verdict: 'gone', note: 'the module has no plan' };
      const planDigest = ctx.plan.archive.digest;
      if (planDigest === digest) return { ...base, digest, planDigest, verdict: 'current' };
      return { ...base, digest, planDigest, verdict: 'behind', note: `the plan names build ${ctx.plan.build}'s archive` };
    }
    case 'bucket': {
      const newest = ctx.newest(place.bucket, input.key);
      const at = { ...base, bucket: place.bucket };
      if (newest === null) return { ...at, verdict: 'gone', note: 'the key holds no entry' };
      const shown = { ...at, newest: { rev: newest.rev, at: newest.at } };
      if (newest.op !== 'PUT') return { ...shown, verdict: 'gone', note: `the key was ${newest.op === 'DEL' ? 'deleted' : 'purged'}` };
      if (input.rev === undefined) return { ...shown, verdict: 'not judged', note: 'the report gives no revision' };
      return input.rev === newest.rev ? { ...shown, verdict: 'current' } : { ...shown, verdict: 'behind', note: `rev ${input.rev} of ${newest.rev}` };
    }
  }
}

function filesOf(report: Report, path: string | undefined): Report['files'] {
  return path === undefined ? report.files : report.files.filter((f) => f.path === path);
}
