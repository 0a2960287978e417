// `mesh-provisioner why NODE MODULE [PATH]` (DESIGN §14): the module's report read through the verb,
// its plan and each input's newest entry by direct get, judged (judge.ts) and printed as a table or
// one JSON object. Exit 0 when every input is current, 1 otherwise.
import type { NatsConnection } from '@nats-io/transport-node';
import { safeJson } from '../../../shared/cli/safe-text.ts';
import type { WhyArgs } from '../../options.ts';
import { cell, formatTable } from '../query/command.ts';
import { judgeReport, keysToRead, type JudgedInput } from './judge.ts';
import { newestKey, readerFailure, readModuleReport, readNewest, readPlan } from './read.ts';

type Say = (line: string) => void;

/** Exit code: every input of every file shown is current. */
const EXIT_CURRENT = 0;
/** Exit code: an input is behind or gone, the node has no report of the module, PATH is not one of its files, or the bus could not be read. */
const EXIT_NOT_CURRENT = 1;

/** What `why --json` prints. */
export type WhyView = { node: string; module: string; build: string; state: string; at: string; path?: string; inputs: JudgedInput[] };

/** Runs `why`; resolves with the exit code. */
export async function runWhy(nc: NatsConnection, args: WhyArgs, out: Say, err: Say): Promise<number> {
  const [report, plan] = await Promise.all([readModuleReport(nc, args.node, args.module), readPlan(nc, args.node, args.module)]);
  if (report !== undefined && 'code' in report) return ((f) => (err(f.message), f.code))(readerFailure('why', report));
  if (report === undefined) return (err(`why: ${args.node} has no report of ${args.module}: nothing to say where its files came from`), EXIT_NOT_CURRENT);
  if (!plan.ok) return (err(`why: ${plan.reason}`), EXIT_NOT_CURRENT);
  if (args.path !== undefined && !report.files.some((f) => f.path === args.path)) {
    return (err(`why: the report of ${args.module} on ${args.node} names no file ${args.path}`), EXIT_NOT_CURRENT);
  }
  const newest = await readNewest(nc, keysToRead(report, plan.value, args.path));
  if (!newest.ok) return (err(`why: ${newest.reason}`), EXIT_NOT_CURRENT);
  const inputs = judgeReport(report, { plan: plan.value, newest: (bucket, key) => newest.value.get(newestKey(bucket, key)) ?? null }, args.path);
  const view: WhyView = {
    node: report.node,
    module: report.module,
    build: report.build,
    state: report.state,
    at: report.at,
    ...(args.path === undefined ? {} : { path: args.path }),
    inputs,
  };
  if (args.json) out(safeJson(view));
  else whyLines(view).forEach((line) => out(line));
  return inputs.some((i) => i.verdict === 'behind' || i.verdict === 'gone') ? EXIT_NOT_CURRENT : EXIT_CURRENT;
}

/** The table of `why`: a heading line with the report and the counts, then a row per input. */
export function whyLines(view: WhyView): string[] {
  const counts = new Map<string, number>();
  for (const i of view.inputs) counts.set(i.verdict, (counts.get(i.verdict) ?? 0) + 1);
  const summary = [...counts].map(([verdict, n]) => `${n} ${verdict}`).join(', ') || 'no inputs';
  const head = `${cell(view.node)} ${cell(view.module)}: report ${cell(view.state)}, build ${cell(view.build)}, at ${cell(view.at)} — ${summary}`;
  const rows = view.inputs.map((i) => [cell(i.path), cell(i.kind), cell(whereOf(i)), held(i), now(i), cell(i.newest?.at ?? ''), verdictCell(i)]);
  return [head, '', ...formatTable(['FILE', 'KIND', 'KEY', 'HELD', 'NOW', 'WRITTEN', 'STATE'], rows)];
}

function whereOf(i: JudgedInput): string {
  return i.bucket === undefined ? i.key : `${i.bucket}:${i.key}`;
}

function held(i: JudgedInput): string {
  if (i.digest !== undefined) return shortDigest(i.digest);
  return i.rev === undefined ? '' : `rev ${i.rev}`;
}

function now(i: JudgedInput): string {
  if (i.planDigest !== undefined) return shortDigest(i.planDigest);
  return i.newest === undefined ? '' : `rev ${i.newest.rev}`;
}

function verdictCell(i: JudgedInput): string {
  return i.note === undefined ? i.verdict : `${i.verdict}: ${cell(i.note)}`;
}

/** A digest cut to what tells two apart in a table (`--json` has it whole). */
function shortDigest(digest: string): string {
  return digest.length > 19 ? `${cell(digest.slice(0, 19))}…` : cell(digest);
}
