// How `status` prints: the fleet as one table (a row per node) and the seat's health under it, a node
// as a block per module; every value from the bus goes through `cell` (safe text, cut past 4 KiB:
// DESIGN §3), so none drives the terminal or forges a line.
import { cell, formatTable } from '../query/command.ts';
import type { ModuleDetail, ModuleHealth, WaitedValue } from './detail.ts';
import type { HealthGroup, NodeSummary, OldestWaiting } from './summary.ts';
import type { RolloutMark } from './rollouts.ts';
import type { NodeWord } from './liveness.ts';

/** A key out of shape, with why. */
type OutOfShapeKey = { key: string; reason: string };

/** What the fleet view shows, and what `status --json` prints. */
export type FleetView = {
  /** One row per node with a report or a health entry, in name order. */
  nodes: NodeSummary[];
  /** Every rollout not done (rolling, halted, aborted), or done with failed nodes, in module order (DESIGN §12). */
  rollouts: ({ module: string } & RolloutMark)[];
  /** What the seat holds or cannot compose, one line per module, state, build and reason. */
  health: HealthGroup[];
  /** Health entries in no listed line, counted only. */
  healthUnlisted: number;
  /** Keys out of shape, the first ones. */
  outOfShape: OutOfShapeKey[];
  /** How many keys were out of shape in all. */
  outOfShapeCount: number;
};

/** What the node view shows, and what `status <node> --json` prints. */
export type NodeView = {
  node: string;
  module?: string;
  /** The node's last word, when it has a plan (DESIGN §14). */
  word?: NodeWord;
  /** Every module with a report or a health entry, in name order. */
  modules: ModuleDetail[];
  /** Keys out of shape, the first ones. */
  outOfShape: OutOfShapeKey[];
  /** How many keys were out of shape in all. */
  outOfShapeCount: number;
};

/** A duration in whole seconds as an operator reads it: `42s`, `5m07s`, `3h05m`, `2d04h`. */
export function formatAge(seconds: number): string {
  const two = (n: number) => String(n).padStart(2, '0');
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${two(seconds % 60)}s`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h${two(Math.floor(seconds / 60) % 60)}m`;
  return `${Math.floor(seconds / 86_400)}d${two(Math.floor(seconds / 3600) % 24)}h`;
}

/** How much of a report's reason the OLDEST WAITING cell shows (`status <node> <module>` shows it whole). */
const OLDEST_REASON_CHARS = 48;

/** The start of a text a cell shows: OLDEST_REASON_CHARS at most, `…` where it was cut. */
function cutText(text: string): string {
  return text.length > OLDEST_REASON_CHARS ? `${text.slice(0, OLDEST_REASON_CHARS)}…` : text;
}

/**
 * The oldest waiting value as a cell: `config:db.host (api, 10m00s)`, with the client's hint as its
 * report says it (`config:colr: did you mean "color"? (web, 7s)`); for a report waiting for no
 * value, the start of its reason: `engine not reachable (connect ENOENT …)… (api, 3s)`.
 */
export function oldestCell(oldest: OldestWaiting | undefined): string {
  if (!oldest) return '';
  const reason = oldest.reason === undefined ? '' : `${cutText(oldest.reason)} `;
  const hint = oldest.hint === undefined ? '' : `: ${cutText(oldest.hint)}`;
  const value = oldest.kind === undefined ? reason : `${oldest.kind}:${oldest.name}${hint} `;
  return cell(`${value}(${oldest.module}, ${formatAge(oldest.seconds)})`);
}

/** The fleet table, a total line, what the seat holds or cannot compose, and any keys out of shape. */
export function fleetLines(view: FleetView): string[] {
  const lines: string[] = [];
  if (view.nodes.length === 0) lines.push('(no reports, and the seat holds nothing)');
  else {
    // The ROLLOUT column is there only while a rollout is not done (DESIGN §12).
    const rolling = view.nodes.some((n) => n.rollouts);
    // A node silent or with its engine down: what it says of its modules is not vouched for (DESIGN §14).
    const rows = view.nodes.map((n) => [
      cell(n.node),
      cell(n.version ?? ''),
      lastWordCell(n),
      n.liveness ?? String(n.applied),
      n.liveness ? '-' : String(n.waiting),
      n.liveness ? '-' : String(n.failed),
      String(n.held),
      String(n.composeFailed),
      String(n.drift),
      oldestCell(n.oldestWaiting),
      ...(rolling ? [cell((n.rollouts ?? []).join(', '))] : []),
    ]);
    lines.push(
      ...formatTable(
        ['NODE', 'VERSION', 'LAST WORD', 'APPLIED', 'WAITING', 'FAILED', 'HELD', 'COMPOSE FAILED', 'DRIFT', 'OLDEST WAITING', ...(rolling ? ['ROLLOUT'] : [])],
        rows,
      ),
    );
  }
  const sum = (k: 'applied' | 'waiting' | 'failed' | 'held' | 'composeFailed') => view.nodes.reduce((total, n) => total + n[k], 0);
  const notDone = view.rollouts.filter((r) => r.state !== 'done').length;
  const unvouched = view.nodes.filter((n) => n.liveness);
  const silent = unvouched.filter((n) => n.liveness === 'silent').length;
  const withFailures = view.rollouts.length - notDone;
  lines.push(
    '',
    `${view.nodes.length} node${view.nodes.length === 1 ? '' : 's'}: ${sum('applied')} applied, ${sum('waiting')} waiting, ${sum('failed')} failed; ` +
      `the seat holds ${sum('held')}, cannot compose ${sum('composeFailed')}` +
      (unvouched.length > 0 ? `; ${silent} silent, ${unvouched.length - silent} with the engine down` : '') +
      (notDone > 0 ? `; ${notDone} rollout${notDone === 1 ? '' : 's'} not done` : '') +
      (withFailures > 0 ? `; ${withFailures} rollout${withFailures === 1 ? '' : 's'} done with failed nodes` : ''),
  );
  if (unvouched.length > 0) {
    lines.push('', 'nodes the seat cannot vouch for (their modules may be stale):');
    lines.push(
      ...formatTable(
        ['NODE', 'STATE', 'REASON'],
        unvouched.map((n) => [cell(n.node), n.liveness ?? '', cell(n.livenessReason)]),
      ),
    );
  }
  if (view.rollouts.length > 0) {
    lines.push(
      '',
      `rollouts ${notDone > 0 ? 'not done (the newest build is not on every node)' : ''}${notDone > 0 && withFailures > 0 ? ', or ' : ''}${withFailures > 0 ? 'done with failed nodes (each keeps the new build, or its plan where the seat cannot compose the new one)' : ''}:`,
    );
    const rows = view.rollouts.map((r) => [cell(r.module), cell(r.state), cell(r.build), String(r.wave), cell(r.reason)]);
    lines.push(...formatTable(['MODULE', 'STATE', 'BUILD', 'WAVE', 'REASON'], rows));
  }
  if (view.health.length > 0) {
    lines.push('', 'the seat holds (held) or cannot compose (failed):');
    const rows = view.health.map((h) => [cell(h.module), h.state, cell(h.build), String(h.nodes), cell(h.since), cell(h.reason)]);
    lines.push(...formatTable(['MODULE', 'STATE', 'BUILD', 'NODES', 'SINCE', 'REASON'], rows));
    if (view.healthUnlisted > 0) lines.push(`… and ${view.healthUnlisted} more entries (status <node> lists a node's)`);
  }
  lines.push(...outOfShapeLines(view.outOfShape, view.outOfShapeCount));
  return lines;
}

/** A block per module of the node: its last report, what the seat says of it, what it waits for and where that lives, its files. */
export function detailLines(view: NodeView): string[] {
  const lines: string[] = view.word ? [wordLine(view.node, view.word)] : [];
  if (view.modules.length === 0) lines.push(`(no report of ${cell(view.node)}${view.module ? ` ${cell(view.module)}` : ''}, and the seat holds nothing of it)`);
  for (const m of view.modules) {
    if (lines.length > 0) lines.push('');
    lines.push(headLine(m, view.word?.liveness));
    if (m.reason !== undefined) lines.push(`  reason: ${cell(m.reason)}`);
    if (m.rollout) {
      // Rolling or done, the node is failed now; halted or aborted, it is one the rollout failed on (planned back since).
      const said = m.rollout.state === 'halted' || m.rollout.state === 'aborted' ? ' — this node failed it: ' : '; this node failed: ';
      const failed = m.rollout.failed === undefined ? '' : `${said}${cell(m.rollout.failed)}`;
      lines.push(`  rollout: ${cell(m.rollout.state)} build ${cell(m.rollout.build)}, wave ${m.rollout.wave}${failed}`);
    }
    if (m.health) lines.push(`  ${healthLine(m.health)}`);
    if (m.waiting.length > 0) {
      const rows = m.waiting.map((w) => [
        `${cell(w.kind)}:${cell(w.name)}`,
        cell(w.owner) || '(not in the registry)',
        whereCell(w),
        w.files.map(cell).join(','),
      ]);
      lines.push(...indent(formatTable(['WAITING FOR', 'OWNER', 'WHERE', 'FILES'], rows)));
      // Under the table, indented past its rows: why a value may never come, once for the values it holds for.
      const noted = new Map<string, string[]>();
      for (const w of m.waiting) if (w.note !== undefined) noted.set(w.note, [...(noted.get(w.note) ?? []), `${w.kind}:${w.name}`]);
      for (const [note, names] of noted) lines.push(`    ${cell(names[0])}${names.length > 1 ? ` and ${names.length - 1} more` : ''}: ${cell(note)}`);
    }
    if (m.files.length > 0) {
      // A reason is the engine's word on a refused file; without one the column is left out.
      const reasons = m.files.some((f) => f.reason !== undefined);
      const drifted = m.drift !== undefined;
      const rows = m.files.map((f) => [
        cell(f.path),
        cell(f.action),
        cell(f.digest),
        ...(drifted ? [String(f.drift?.count ?? 0)] : []),
        ...(reasons ? [cell(f.reason)] : []),
      ]);
      lines.push(...indent(formatTable(['FILE', 'ACTION', 'DIGEST', ...(drifted ? ['DRIFT'] : []), ...(reasons ? ['REASON'] : [])], rows)));
    }
  }
  lines.push(...outOfShapeLines(view.outOfShape, view.outOfShapeCount));
  return lines;
}

/**
 * `n1 web: waiting, build 1, reported 10m00s ago (…)`, `n1 web: no report` when the node has none; a
 * node silent or with its engine down says so in place of the state: `n1 web: silent (last report applied, …)`.
 */
function headLine(m: ModuleDetail, liveness?: string): string {
  const name = `${cell(m.node)} ${cell(m.module)}`;
  if (m.state === undefined) return `${name}: ${liveness ? `${liveness} (no report)` : 'no report'}`;
  const state = liveness ? `${liveness} (last report ${m.state}` : m.state;
  // Restores are said only where there were some (DESIGN §14): a file put back is no failure.
  const drift = m.drift === undefined ? '' : `; drift ${m.drift.count}, last ${cell(m.drift.last)}`;
  return `${name}: ${state}, build ${cell(m.build) || '?'}, reported ${formatAge(m.seconds ?? 0)} ago (${cell(m.at)})${liveness ? ')' : ''}${drift}`;
}

/** The LAST WORD cell: how long ago the seat heard the node (`12s`), `-` when it has not since it started. */
function lastWordCell(w: NodeWord): string {
  return w.lastWordSeconds === undefined ? (w.liveness || w.version !== undefined ? '-' : '') : formatAge(w.lastWordSeconds);
}

/** `n1: client 0.2.0, last word 3s ago (every 30 s)`, then `silent: <reason>` or `engine down: <reason>` when it is. */
function wordLine(node: string, w: NodeWord): string {
  const version = w.version === undefined ? 'no word heard since the seat started' : `client ${cell(w.version)}`;
  const heard = w.lastWordSeconds === undefined ? '' : `, last word ${formatAge(w.lastWordSeconds)} ago${w.every === undefined ? '' : ` (every ${w.every} s)`}`;
  const state = w.liveness ? `; ${w.liveness}: ${cell(w.livenessReason)}` : '';
  return `${cell(node)}: ${version}${heard}${state}`;
}

/** What the seat says of a module: `held by the seat: composition not published (build 3, 4 passes, since 5m00s)`. */
function healthLine(h: ModuleHealth): string {
  const build = h.build ? `build ${cell(h.build)}, ` : '';
  const passes = `${h.passes} ${h.passes === 1 ? 'pass' : 'passes'}`;
  const said = h.state === 'held' ? 'held by the seat' : 'the seat cannot compose it';
  return `${said}: ${cell(h.reason)} (${build}${passes}, since ${formatAge(h.seconds)} ago)`;
}

/** The bucket and key a value is read from (`mesh-config_resolved n1.web.db.host`), its field after; or the verb. */
function whereCell(w: WaitedValue): string {
  return [w.where, w.key, w.field]
    .filter((x) => x)
    .map(cell)
    .join(' ');
}

function outOfShapeLines(listed: OutOfShapeKey[], count: number): string[] {
  if (count === 0) return [];
  const more = count > listed.length ? `, the first ${listed.length} listed` : '';
  return [
    '',
    `out of shape (${count}${more}):`,
    ...formatTable(
      ['KEY', 'REASON'],
      listed.map(({ key, reason }) => [cell(key), cell(reason)]),
    ),
  ];
}

function indent(lines: string[]): string[] {
  return lines.map((line) => `  ${line}`);
}
