// `mesh-provisioner trace KEY-PATTERN` (DESIGN §14): the newest revision of each key matched
// (scan.ts), then the fleet's reports through the verb page by page, each folded into the tally
// (tally.ts) and dropped; printed as lines or one JSON object. Exit 0 when every node using a matched
// key holds its newest revision.
import type { NatsConnection } from '@nats-io/transport-node';
import { errorText, isPermissionViolation } from '../../../shared/base/errors.ts';
import { safeJson } from '../../../shared/cli/safe-text.ts';
import type { TraceArgs } from '../../options.ts';
import { cell, forEachPage } from '../query/command.ts';
import { readReport } from '../status/summary.ts';
import { READER_LOGIN_HINT, readerFailure } from '../why/read.ts';
import { DEFAULT_TRACE_LIMIT } from './command-line.ts';
import { scanNewest } from './scan.ts';
import { TraceTally, type BehindNode, type TraceView } from './tally.ts';

type Say = (line: string) => void;

/** Exit code: every node whose files use a matched key holds its newest revision. */
const EXIT_CURRENT = 0;
/** Exit code: a node is behind, no key matched, or the bus could not be read. */
const EXIT_NOT_CURRENT = 1;

/** Runs `trace`; resolves with the exit code. */
export async function runTrace(nc: NatsConnection, args: TraceArgs, out: Say, err: Say): Promise<number> {
  const target = { bucket: args.bucket, pattern: args.pattern };
  // The keys' revisions and the reports are read at once: the tally keeps only the inputs the pattern matches until both are in.
  const scanned = scanNewest(nc, target).then(
    (matched) => ({ matched }),
    (e: unknown) => ({ failed: e }),
  );
  const tally = new TraceTally(target);
  let unreadable = 0;
  const failed = await forEachPage(nc, { what: 'applied', limit: args.limit ?? DEFAULT_TRACE_LIMIT }, (page) => {
    for (const { value } of page.entries) {
      const read = readReport(value);
      if (read.ok) tally.addReport(read.value);
      else unreadable += 1;
    }
    unreadable += page.outOfShape.length;
  });
  const scan = await scanned;
  if ('failed' in scan) {
    const refused = isPermissionViolation(scan.failed) ? `; ${READER_LOGIN_HINT}` : '';
    return (err(`trace: reading the keys of ${args.bucket} matching ${args.pattern} failed: ${errorText(scan.failed)}${refused}`), EXIT_NOT_CURRENT);
  }
  if (scan.matched.size === 0) return (err(`trace: no key of ${args.bucket} matches ${args.pattern}`), EXIT_NOT_CURRENT);
  if (failed) return ((f) => (err(f.message), f.code))(readerFailure('trace', failed));
  const view = tally.view(scan.matched);
  if (args.json) out(safeJson({ ...view, outOfShape: unreadable }));
  else traceLines(`${args.bucket}:${args.pattern}`, view, unreadable).forEach((line) => out(line));
  return view.behind.length === 0 ? EXIT_CURRENT : EXIT_NOT_CURRENT;
}

/** The lines of `trace`: the keys matched, the nodes in place out of those using them, then a line per node behind. */
export function traceLines(where: string, view: TraceView, unreadable = 0): string[] {
  const deleted = view.deleted === 0 ? '' : ` (${view.deleted} deleted)`;
  const newest = view.newest ? `, newest rev ${view.newest.rev} (${cell(view.newest.key)}, ${view.newest.at})` : '';
  const lines = [`${cell(where)}: ${view.keys} key${view.keys === 1 ? '' : 's'} matched${deleted}${newest}`];
  if (view.nodes === 0) lines.push("no node's report says its files use them");
  else lines.push(`newest revision in place on ${view.current} of ${view.nodes} node${view.nodes === 1 ? '' : 's'} whose files use them`);
  if (view.withoutFrom > 0) lines.push(`${view.withoutFrom} report(s) name no inputs (a client before provenance, DESIGN §14): not judged`);
  if (unreadable > 0) lines.push(`${unreadable} report(s) out of shape: not judged (query applied lists them)`);
  return [...lines, ...view.behind.map(behindLine)];
}

/** `n17: rev 41 of 42 (n17.web.color in /etc/web/web.conf of web), waiting: engine not reachable`. */
function behindLine(b: BehindNode): string {
  const held = b.gone ? `rev ${b.rev ?? '?'}, the key deleted at rev ${b.newest}` : `rev ${b.rev ?? '?'} of ${b.newest}`;
  const more = b.behind > 1 ? `, ${b.behind - 1} more input(s) behind` : '';
  const reason = b.reason === undefined ? '' : `: ${cell(b.reason)}`;
  return `${cell(b.node)}: ${held} (${cell(b.key)} in ${cell(b.path)} of ${cell(b.module)}${more}), ${b.state}${reason}`;
}
