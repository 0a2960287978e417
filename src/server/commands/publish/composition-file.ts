// The composition file `publish` takes (DESIGN §13): §4's composition without `archive`, checked
// strictly — every unknown field with its path and the nearest known name, the rollout as §12 says —
// and made into the value to write, its fields as the author wrote them.
import { MAX_PLAN_BYTES, parseBoundedJson } from '../../../shared/contract/limits.ts';
import { CompositionFileSchema } from '../../../shared/contract/composition.ts';
import { validateEach } from '../../../shared/contract/decode.ts';
import { readRegularFile } from '../../../shared/base/regular-file.ts';
import type { ComposedFields } from '../../../module/composition-plan.ts';

/** A composition file that passed: what to write (without its archive) and what the templates are judged against. */
export type CheckedComposition = {
  /** The module. */
  module: string;
  /** The build: `--build`, else the file's. */
  build: string;
  /** The value to write, `archive` aside: module, build, published, and the file's provisioning and rollout as written. */
  value: Record<string, unknown>;
  /** The file as validated, defaults filled in. */
  parsed: ComposedFields;
};

/** The checked composition, or every problem found (`unreadable`: the file could not be read at all). */
export type ReadComposition = { ok: true; value: CheckedComposition } | { ok: false; problems: string[]; unreadable: boolean };

/**
 * Reads and checks the composition file at `path`, `build` (from `--build`) in place of its own: a
 * regular file only, refused past a composition's limit (DESIGN §3) by its size, before it is read.
 */
export async function readCompositionFile(path: string, build?: string): Promise<ReadComposition> {
  const read = readRegularFile(path, MAX_PLAN_BYTES);
  // Named by its flag, as --nkey's refusal is: `publish DIR --composition FILE` takes two paths.
  if (!read.ok) return { ok: false, unreadable: true, problems: [`--composition: ${read.reason}`] };
  const raw = parseBoundedJson(read.value, { maxBytes: MAX_PLAN_BYTES });
  if (!raw.ok) return refused([raw.reason]);
  if (typeof raw.value !== 'object' || raw.value === null || Array.isArray(raw.value)) return refused(['is not a JSON object']);
  return checkComposition(raw.value as Record<string, unknown>, build);
}

/** Checks a composition file's JSON object; `build` replaces its own. */
export function checkComposition(file: Record<string, unknown>, build?: string): ReadComposition {
  const problems: string[] = [];
  const { archive, ...fields } = file;
  if (archive !== undefined) problems.push('field "archive" is filled in by publish from the archive it stores: remove it from the file');
  if (build !== undefined) fields['build'] = build;
  const checked = validateEach(CompositionFileSchema, fields);
  if (!checked.ok) return refused([...problems, ...checked.reasons]);
  const parsed = checked.value;
  if (parsed.build === undefined) problems.push('field "build" is missing: give it in the file or with --build');
  if (problems.length > 0 || parsed.build === undefined) return refused(problems);
  const value: Record<string, unknown> = { module: parsed.module, build: parsed.build, published: parsed.published };
  for (const name of ['provisioning', 'rollout'] as const) if (fields[name] !== undefined) value[name] = fields[name];
  return { ok: true, value: { module: parsed.module, build: parsed.build, value, parsed } };
}

function refused(problems: string[]): ReadComposition {
  return { ok: false, problems, unreadable: false };
}
