// `assign NODE MODULE [--dir NAME=PATH …] …` and `unassign NODE MODULE` (DESIGN §13): the
// controller's input, `mesh-controller_assignments` key `<node>.<module>` holding `{node, module,
// placement}` (§3). Checked against the grammars only, never against the catalogue: what the seat
// cannot compose it says in `health`.
import type { NatsConnection } from '@nats-io/transport-node';
import { ASSIGNMENTS } from '../../../shared/contract/buckets.ts';
import { jsonBytes } from '../../../shared/base/bytes.ts';
import { checkName, nodeModuleKey } from '../../../shared/contract/keys.ts';
import { MAX_PLAN_BYTES } from '../../../shared/contract/limits.ts';
import { PLACEMENT_KINDS, type PlacementKind } from '../../../shared/contract/registry.ts';
import { fail, ok, type Parsed } from '../../../shared/base/result.ts';
import { MAX_PATH_BYTES, pathProblem, PLACEHOLDER_NAME_PATTERN, tokenProblem } from '../../../shared/contract/fields.ts';
import type { Assignment, Placement } from '../../../shared/contract/assignment.ts';
import { safeJson } from '../../../shared/cli/safe-text.ts';
import { inputFailure, isUnchanged, openInputBucket, readStored } from '../input-bucket.ts';
import { catalogueWarning } from './catalogue.ts';

type Say = (line: string) => void;

/** The node and module an assignment is keyed by. */
export type AssignmentTarget = { node: string; module: string };

/** The highest port number. */
const MAX_PORT = 65535;
/** Names valibot's records skip as they read (the seat reads placement maps with one): such a name would vanish. */
const SKIPPED_NAMES = new Set(['__proto__', 'constructor', 'prototype']);
// C0, DEL and C1: a placement value lands in paths and config lines, where a control character is a mistake.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Says why node and module cannot key an assignment; nothing when they can. */
export function targetProblem(node: string, module: string): string | undefined {
  return checkName('node', node) ?? checkName('module', module);
}

/**
 * Builds a placement from each placement flag's `NAME=VALUE` items: a `--dir` an absolute, normal
 * path; a `--port` a number 1–65535; an `--access`, `--seat` or `--machine` text without control
 * characters. A name given twice in one flag is refused naming it; the reason names the flag.
 */
export function placementFromFlags(given: Partial<Record<PlacementKind, readonly string[]>>): Parsed<Placement> {
  const placement: Placement = {};
  for (const kind of PLACEMENT_KINDS) {
    const items = given[kind];
    if (items === undefined || items.length === 0) continue;
    const map: Record<string, string | number> = {};
    for (const item of items) {
      const at = item.indexOf('=');
      if (at < 0) return fail(`--${kind}: ${JSON.stringify(item)} is not NAME=VALUE`);
      const name = item.slice(0, at);
      const nameBad = placementNameProblem(name);
      if (nameBad !== undefined) return fail(`--${kind}: name ${JSON.stringify(name)} ${nameBad}`);
      if (Object.hasOwn(map, name)) return fail(`--${kind}: ${JSON.stringify(name)} is given twice`);
      const value = placementValue(kind, item.slice(at + 1));
      if (!value.ok) return fail(`--${kind} ${name}: ${value.reason}`);
      map[name] = value.value;
    }
    placement[kind] = map;
  }
  return ok(placement);
}

/** Says why a placement name cannot be one: one `${<kind>:<name>}` could not name, or one the seat would not read. */
function placementNameProblem(name: string): string | undefined {
  if (!PLACEHOLDER_NAME_PATTERN.test(name)) return 'is not a name a placeholder can hold (not empty, no whitespace, {, } or $, not starting with - + or ?)';
  if (SKIPPED_NAMES.has(name)) return 'is a name the seat does not read';
  return tokenProblem(name);
}

/** A placement value as its flag's grammar reads it. */
function placementValue(kind: PlacementKind, text: string): Parsed<string | number> {
  if (kind === 'port') {
    const port = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
    return port >= 1 && port <= MAX_PORT ? ok(port) : fail(`${JSON.stringify(text)} is not a port number 1–${MAX_PORT}`);
  }
  if (kind === 'dir') {
    const problem = pathProblem(text);
    return problem === undefined ? ok(text) : fail(`${JSON.stringify(text)} ${problem}`);
  }
  if (text === '') return fail('is empty');
  if (CONTROL.test(text)) return fail(`${safeJson(text)} holds a control character`);
  const bytes = Buffer.byteLength(text);
  return bytes > MAX_PATH_BYTES ? fail(`is ${bytes} bytes, past the limit of ${MAX_PATH_BYTES}`) : ok(text);
}

/** Says why an assignment is past the size the seat reads (a plan's, DESIGN §3); nothing when it fits. */
export function assignmentSizeProblem(assignment: Assignment): string | undefined {
  const bytes = jsonBytes(assignment).length;
  return bytes > MAX_PLAN_BYTES ? `the assignment is ${bytes} bytes, past the limit of ${MAX_PLAN_BYTES} bytes the seat reads` : undefined;
}

/**
 * Writes the assignment (unless the bucket holds these bytes already); one line said, and a warning
 * when the module was never published or is not yet (exit 0 all the same). Resolves the exit code.
 */
export async function runAssign(nc: NatsConnection, assignment: Assignment, replicas: number, out: Say, err: Say): Promise<number> {
  const bytes = jsonBytes(assignment);
  const key = nodeModuleKey(assignment.node, assignment.module);
  const where = `${ASSIGNMENTS} ${key}`;
  try {
    const kv = await openInputBucket(nc, { bucket: ASSIGNMENTS, replicas }, err);
    const stored = await readStored(kv, key);
    if (isUnchanged(stored, bytes)) {
      out(`${assignment.module} is assigned to ${assignment.node} with that placement already: unchanged (${where}, revision ${stored!.revision})`);
    } else {
      const revision = await kv.put(key, bytes);
      out(`assigned ${assignment.module} to ${assignment.node}, placement ${safeJson(assignment.placement)} (${where}, revision ${revision})`);
    }
  } catch (e) {
    return (err(inputFailure(e, ASSIGNMENTS)), 1);
  }
  const warning = await catalogueWarning(nc, assignment.module);
  if (warning !== undefined) err(`warning: ${warning}`);
  return 0;
}

/** Deletes the assignment; a missing one is said and exits 1 (the command did nothing). Resolves the exit code. */
export async function runUnassign(nc: NatsConnection, target: AssignmentTarget, replicas: number, out: Say, err: Say): Promise<number> {
  const key = nodeModuleKey(target.node, target.module);
  const where = `${ASSIGNMENTS} ${key}`;
  try {
    const kv = await openInputBucket(nc, { bucket: ASSIGNMENTS, replicas }, err);
    if ((await readStored(kv, key)) === undefined) {
      err(`${target.module} is not assigned to ${target.node}: nothing to delete (${where})`);
      return 1;
    }
    await kv.delete(key);
    out(`unassigned ${target.module} from ${target.node}: the seat retires its plan (${where} deleted)`);
    return 0;
  } catch (e) {
    return (err(inputFailure(e, ASSIGNMENTS)), 1);
  }
}
