// A composition judged before any node has it (issue 20 item 6): made into the plan every node
// would get but for the placement — which is each node's assignment — so `lint --plan` and
// `publish` judge its templates with the very checks a plan gets. What would fail every plan
// composed from it (a secret named twice, a path no placement can make absolute) is said too.
import { parsePlaceholders, scanPlaceholders } from '../shared/contract/placeholders.ts';
import { isPlacementKind } from '../shared/contract/registry.ts';
import type { Composition } from '../shared/contract/composition.ts';
import type { Plan } from '../shared/contract/plan.ts';

/** What `lint` and `publish` read of a composition: the bucket's value and `publish`'s file alike. */
export type ComposedFields = Pick<Composition, 'module' | 'provisioning'> & { build?: string | undefined; archive?: Composition['archive'] };

/** A composition as a plan without a node, and what would fail every plan composed from it. */
export type UnplacedPlan = { plan: Plan; problems: string[] };

/** The archive a composition has not got yet (`publish`'s file): lint never compares its digest. */
const NO_ARCHIVE = { ref: 'obj://none/none', digest: `sha256:${'0'.repeat(64)}` };

/**
 * The plan of `composition` as the seat composes it (DESIGN §4), its paths as written and no
 * placement: lint reads the names (templates, secrets, collections, provisions), never a vault name
 * or a node, so those stay empty.
 */
export function planOfComposition(composition: ComposedFields): UnplacedPlan {
  const p = composition.provisioning;
  const problems: string[] = [];
  const secrets = [...p.secrets.map((s) => s.name), ...p.provisions.flatMap((x) => (x.name === undefined ? [] : [x.name]))];
  const named = new Set<string>();
  for (const name of secrets) {
    if (named.has(name)) problems.push(`secret "${name}" is named twice (a module's secrets and its provisions' names are one list)`);
    named.add(name);
  }
  for (const f of p.files) problems.push(...pathProblems(`file ${f.template}`, f.path));
  for (const s of p.secrets) if (s.path !== undefined) problems.push(...pathProblems(`secret ${s.name}`, s.path));
  const plan: Plan = {
    node: '',
    module: composition.module,
    build: composition.build ?? '',
    archive: composition.archive ?? NO_ARCHIVE,
    files: p.files,
    placement: {},
    secrets: [...named].map((name) => ({ name, vault: '' })),
    provisions: p.provisions.map((x) => ({ ...x, node: x.node ?? '' })),
    provides: p.provides,
    items: p.items,
    collections: p.collections,
  };
  return { plan, problems };
}

/**
 * What no assignment can put right in a file's or secret's path: a placeholder that is not
 * placement, a start that is not `/` or one, or a `.` or `..` segment of text alone.
 */
function pathProblems(what: string, path: string): string[] {
  const problems = parsePlaceholders(path)
    .filter((p) => !isPlacementKind(p.kind))
    .map((p) => `${what}: path "${path}": \${${p.kind}:${p.name}} is not a placement kind (dir, access, port, seat, machine)`);
  if (!path.startsWith('/') && !path.startsWith('${')) problems.push(`${what}: path "${path}" is not absolute`);
  const dots = fixedDotSegment(path);
  if (dots !== undefined)
    problems.push(
      `${what}: path "${path}" holds a "${dots}" segment whatever the placement: the seat refuses every path it resolves to (a path is absolute and normal)`,
    );
  return problems;
}

/**
 * The first `.` or `..` segment of a path template that no placement can change: one bounded by
 * `/` or the path's ends, no placeholder inside it or touching it. (A segment touching one, `..${x}`,
 * depends on the value.)
 */
function fixedDotSegment(path: string): string | undefined {
  const { literals } = scanPlaceholders(path);
  // Each placeholder's place is one character no literal segment can be made of.
  const segments = literals.join('\0').split('/');
  return segments.find((s) => s === '.' || s === '..');
}
