// `query drift` (DESIGN §14): every file of the fleet the engine put back, newest first, read from
// the reports' `drift` through the verb's `applied`, page by page; only drifted files are kept.
import type { NatsConnection } from '@nats-io/transport-node';
import { safeJson } from '../../../shared/cli/safe-text.ts';
import { compareKeys } from '../../../shared/contract/keys.ts';
import type { QueryArgs } from '../../options.ts';
import { readReport } from '../status/summary.ts';
import { cell, forEachPage, formatTable } from './command.ts';

/** One drifted file: its node, module and path, its restores since the client started and the time of the last. */
export type DriftedFile = { node: string; module: string; path: string; count: number; last: string };

/** Runs `query drift [--node N] [--module M] [--json]`; resolves with the exit code (0 once read, whatever drifted). */
export async function runQueryDrift(nc: NatsConnection, args: QueryArgs, out: (line: string) => void, err: (line: string) => void): Promise<number> {
  const files: DriftedFile[] = [];
  const outOfShape: { key: string; reason: string }[] = [];
  const request = {
    what: 'applied',
    ...(args.node ? { node: args.node } : {}),
    ...(args.module ? { module: args.module } : {}),
    ...(args.limit ? { limit: args.limit } : {}),
  };
  const failed = await forEachPage(nc, request, (page) => {
    for (const { key, value } of page.entries) {
      const read = readReport(value);
      if (!read.ok) outOfShape.push({ key, reason: `value: ${read.reason}` });
      else
        for (const f of read.value.files)
          if (f.drift && f.drift.count > 0) files.push({ node: read.value.node, module: read.value.module, path: f.path, ...f.drift });
    }
    outOfShape.push(...page.outOfShape);
  });
  if (failed) return (err(failed.message), failed.code);
  files.sort(newestFirst);
  if (args.json) out(safeJson({ what: 'drift', entries: files, outOfShape }));
  else {
    if (files.length === 0) out('(no drifted files: the engines have put nothing back since their clients started)');
    else
      formatTable(
        ['NODE', 'MODULE', 'PATH', 'COUNT', 'LAST'],
        files.map((f) => [cell(f.node), cell(f.module), cell(f.path), String(f.count), cell(f.last)]),
      ).forEach((l) => out(l));
    if (outOfShape.length > 0) {
      out('');
      out(`out of shape (${outOfShape.length}):`);
      formatTable(
        ['KEY', 'REASON'],
        outOfShape.map(({ key, reason }) => [cell(key), cell(reason)]),
      ).forEach((l) => out(l));
    }
  }
  return 0;
}

/** Newest `last` first; a time that does not parse last; ties by node, module and path. */
function newestFirst(a: DriftedFile, b: DriftedFile): number {
  const ta = Date.parse(a.last);
  const tb = Date.parse(b.last);
  const byTime = (Number.isNaN(tb) ? -Infinity : tb) - (Number.isNaN(ta) ? -Infinity : ta);
  if (byTime !== 0 && !Number.isNaN(byTime)) return byTime;
  return compareKeys(a.node, b.node) || compareKeys(a.module, b.module) || compareKeys(a.path, b.path);
}
