// How `status` prints: the fleet as one table (a row per node), a node as a block per module; every
// value from the bus goes through `cell` (safe text, cut past 4 KiB: DESIGN §3), so none drives the
// terminal or forges a line.
import { cell, formatTable } from '../query.ts';
import type { Held, ModuleDetail, NodeSummary, OldestWaiting } from './summary.ts';

/** What the fleet view shows, and what `status --json` prints. */
export type FleetView = {
  /** One row per node with a report, in key order. */
  nodes: NodeSummary[];
  /** The modules the seat holds; null when the catalogue could not be read. */
  held: Held[] | null;
  /** Keys out of shape, the first ones. */
  outOfShape: { key: string; reason: string }[];
  /** How many keys were out of shape in all. */
  outOfShapeCount: number;
};

/** What the node view shows, and what `status <node> --json` prints. */
export type NodeView = {
  node: string;
  module?: string;
  modules: ModuleDetail[];
  outOfShape: { key: string; reason: string }[];
};

/** A duration in whole seconds as an operator reads it: `42s`, `5m07s`, `3h05m`, `2d04h`. */
export function formatAge(seconds: number): string {
  const two = (n: number) => String(n).padStart(2, '0');
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${two(seconds % 60)}s`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h${two(Math.floor(seconds / 60) % 60)}m`;
  return `${Math.floor(seconds / 86_400)}d${two(Math.floor(seconds / 3600) % 24)}h`;
}

/** The oldest waiting value as a cell: `config:db.host (api, 10m00s)`. */
export function oldestCell(oldest: OldestWaiting | undefined): string {
  if (!oldest) return '';
  const value = oldest.kind === undefined ? '' : `${oldest.kind}:${oldest.name} `;
  return cell(`${value}(${oldest.module}, ${formatAge(oldest.seconds)})`);
}

/** The fleet table, the held modules, a total line and any keys out of shape. */
export function fleetLines(view: FleetView): string[] {
  const lines: string[] = [];
  if (view.nodes.length === 0) lines.push('(no reports)');
  else {
    // The ROLLOUT column is there only while a rollout rolls or is halted.
    const rolling = view.nodes.some((n) => n.rollouts);
    const rows = view.nodes.map((n) => [
      cell(n.node),
      String(n.applied),
      String(n.waiting),
      String(n.failed),
      oldestCell(n.oldestWaiting),
      cell(n.held.join(',')),
      ...(rolling ? [cell((n.rollouts ?? []).join(', '))] : []),
    ]);
    lines.push(...formatTable(['NODE', 'APPLIED', 'WAITING', 'FAILED', 'OLDEST WAITING', 'HELD', ...(rolling ? ['ROLLOUT'] : [])], rows));
  }
  const sum = (k: 'applied' | 'waiting' | 'failed') => view.nodes.reduce((total, n) => total + n[k], 0);
  lines.push('', `${view.nodes.length} nodes: ${sum('applied')} applied, ${sum('waiting')} waiting, ${sum('failed')} failed`);
  if (view.held === null) lines.push('held modules unknown: the catalogue could not be read');
  else if (view.held.length > 0) {
    lines.push('', `held unpublished (${view.held.length}):`);
    lines.push(
      ...formatTable(
        ['MODULE', 'BUILD', 'REASON'],
        view.held.map((h) => [cell(h.module), cell(h.build), cell(h.reason)]),
      ),
    );
  }
  lines.push(...outOfShapeLines(view.outOfShape, view.outOfShapeCount));
  return lines;
}

/** A block per module of the node: its last report, what it waits for and who owns that, its files. */
export function detailLines(view: NodeView): string[] {
  const lines: string[] = [];
  if (view.modules.length === 0) lines.push(`(no report of ${view.node}${view.module ? ` ${view.module}` : ''})`);
  for (const m of view.modules) {
    if (lines.length > 0) lines.push('');
    lines.push(`${cell(m.node)} ${cell(m.module)}: ${m.state}, build ${cell(m.build) || '?'}, reported ${formatAge(m.seconds)} ago (${cell(m.at)})`);
    if (m.reason !== undefined) lines.push(`  reason: ${cell(m.reason)}`);
    if (m.rollout) lines.push(`  rollout: ${cell(m.rollout.state)} build ${cell(m.rollout.build)}, wave ${m.rollout.wave}`);
    if (m.held) lines.push(`  held by the seat: ${cell(m.held.reason)}${m.held.build ? ` (build ${cell(m.held.build)})` : ''}`);
    if (m.waiting.length > 0) {
      const rows = m.waiting.map((w) => [
        `${cell(w.kind)}:${cell(w.name)}`,
        cell(w.owner) || '(not in the registry)',
        cell(w.where),
        w.files.map(cell).join(','),
      ]);
      lines.push(...indent(formatTable(['WAITING FOR', 'OWNER', 'WHERE', 'FILES'], rows)));
    }
    if (m.files.length > 0) {
      // A reason is the engine's word on a refused file; without one the column is left out.
      const reasons = m.files.some((f) => f.reason !== undefined);
      const rows = m.files.map((f) => [cell(f.path), cell(f.action), cell(f.digest), ...(reasons ? [cell(f.reason)] : [])]);
      lines.push(...indent(formatTable(['FILE', 'ACTION', 'DIGEST', ...(reasons ? ['REASON'] : [])], rows)));
    }
  }
  lines.push(...outOfShapeLines(view.outOfShape, view.outOfShape.length));
  return lines;
}

function outOfShapeLines(listed: { key: string; reason: string }[], count: number): string[] {
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
