// Composes one plan from an assignment and its module's composition (DESIGN §4), as pure data.
import { moduleSecretVault, pairVault } from '../../shared/contract/vault-names.ts';
import type { Parsed } from '../../shared/base/result.ts';
import { renderPlaceholders } from '../../shared/contract/placeholders.ts';
import { isPlacementKind } from '../../shared/contract/registry.ts';
import { pathProblem } from '../../shared/contract/fields.ts';
import type { Assignment, Placement } from '../../shared/contract/assignment.ts';
import type { Composition } from '../../shared/contract/composition.ts';
import type { Plan, PlanSecret } from '../../shared/contract/plan.ts';
import { errorText } from '../../shared/base/errors.ts';

/**
 * Resolves every `${dir|access|port|seat|machine:…}` of a path from the placement; the result must
 * be absolute and normal (no `.` or `..` segment, no `//`, no trailing `/`, no NUL or line break).
 */
export function resolvePath(path: string, placement: Placement): Parsed<string> {
  let resolved: string;
  try {
    resolved = renderPlaceholders(path, (p) => {
      if (!isPlacementKind(p.kind)) throw new Error(`\${${p.kind}:${p.name}} is not a placement kind`);
      // Own keys only: a placeholder named `__proto__` or `toString` is not in any placement.
      const namespace = placement[p.kind];
      const value = namespace && Object.hasOwn(namespace, p.name) ? namespace[p.name] : undefined;
      if (value === undefined) throw new Error(`\${${p.kind}:${p.name}} is not in the assignment's placement`);
      return String(value);
    });
  } catch (err) {
    return { ok: false, reason: errorText(err) };
  }
  const problem = pathProblem(resolved);
  if (problem !== undefined) return { ok: false, reason: `resolves to ${JSON.stringify(resolved.slice(0, 300))}, which ${problem}` };
  return { ok: true, value: resolved };
}

/**
 * Composes the plan of `assignment` from a published `composition`; a path that cannot be
 * resolved or a secret named twice fails the plan with the reason.
 */
export function composePlan(assignment: Assignment, composition: Composition): Parsed<Plan> {
  const { node, module, placement } = assignment;
  if (!composition.archive) return { ok: false, reason: `composition of ${module} build ${composition.build} has no archive` };
  const p = composition.provisioning;

  const files: Plan['files'] = [];
  for (const file of p.files) {
    const path = resolvePath(file.path, placement);
    if (!path.ok) return { ok: false, reason: `file ${file.template}: path "${file.path}": ${path.reason}` };
    files.push({ ...file, path: path.value });
  }

  const provisions = p.provisions.map((x) => ({ ...x, node: x.node ?? node }));
  const secrets: PlanSecret[] = [];
  for (const secret of p.secrets) {
    const entry: PlanSecret = { name: secret.name, vault: moduleSecretVault(module, secret.name) };
    if (secret.path !== undefined) {
      const path = resolvePath(secret.path, placement);
      if (!path.ok) return { ok: false, reason: `secret ${secret.name}: path "${secret.path}": ${path.reason}` };
      entry.path = path.value;
    }
    secrets.push(entry);
  }
  for (const x of provisions) {
    if (x.name === undefined) continue;
    // The credential is the consumer's own: its node and module, the provider's name and provision.
    const vault = pairVault({ provider: x.provider, provision: x.provision, node, module, ...(x.local !== undefined ? { local: x.local } : {}) });
    secrets.push({ name: x.name, vault });
  }
  const names = new Set<string>();
  for (const s of secrets) {
    if (names.has(s.name)) return { ok: false, reason: `secret "${s.name}" is named twice` };
    names.add(s.name);
  }

  return {
    ok: true,
    value: {
      node,
      module,
      build: composition.build,
      archive: composition.archive,
      files,
      placement,
      secrets,
      provisions,
      provides: p.provides,
      items: p.items,
      collections: p.collections,
    },
  };
}
