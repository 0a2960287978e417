// What --dry-run leaves (issue 14): each file at DIR + its absolute path, its content as the engine
// would be handed it with each secret part written `${secret:<name>}` (the text its digest is
// computed over), and DIR/mesh-dry-run.json saying per module what it hands, waits for, or why it failed.
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { contentDigest, contentText, DEFAULT_FILE_MODE, SECRET_FILE_MODE, secretNamesOf, type FillFile } from '../../../shared/contract/fill-protocol.ts';
import { fail, ok, type Parsed } from '../../../shared/base/result.ts';
import { safeJson, safeText } from '../../../shared/cli/safe-text.ts';
import type { Rendered } from './capture.ts';
import type { Waiting } from '../../fill/fill.ts';
import { describeStanding, type Standing } from '../once/book.ts';
import { errorText } from '../../../shared/base/errors.ts';

/** The summary's name in DIR; a module file at `/mesh-dry-run.json` goes beside it as another would. */
export const DRY_RUN_SUMMARY = 'mesh-dry-run.json';

/** One file as the summary lists it: how the engine would be asked to write it, and where its content is. */
export type DryRunFile = Pick<FillFile, 'path' | 'mode' | 'change' | 'owner' | 'fileMode' | 'comment' | 'digest'> & {
  /** Where under DIR its content was written: the path without its `/`, or `<path>@<module>` when another module hands the same path. */
  written?: string;
  /** Why it could not be written under DIR. */
  error?: string;
  /** The secrets its content leaves for the engine. */
  secrets: string[];
};

/** One module as the summary lists it. */
export type DryRunModule = {
  module: string;
  build?: string;
  /** `complete`: every file rendered and handed; else what it waits for or why it failed. */
  state: 'complete' | 'waiting' | 'failed';
  reason?: string;
  files: DryRunFile[];
  waiting: Waiting[];
  /** The items it would record (only when nothing of it waits). */
  items: { collection: string; digest: string; content: string }[];
};

/** DIR/mesh-dry-run.json. */
export type DryRunSummary = { node: string; dir: string; complete: boolean; timedOut: boolean; modules: DryRunModule[] };

/** Makes DIR (mode 0700) or takes an empty one: a dry run never writes over a file it did not make. */
export async function prepareDryRunDir(dir: string): Promise<Parsed<void>> {
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const present = await readdir(dir);
    return present.length === 0 ? ok(undefined) : fail(`--dry-run: ${dir} is not empty; give a new or empty dir`);
  } catch (err) {
    return fail(`--dry-run: cannot use ${dir}: ${errorText(err, { cause: true })}`);
  }
}

/** Writes every module's files (each 0600: a consumers file holds credentials) and the summary; returns the summary. */
export async function writeDryRun(
  dir: string,
  node: string,
  modules: readonly { standing: Standing; rendered: Rendered }[],
  timedOut: boolean,
): Promise<DryRunSummary> {
  const taken = new Set([DRY_RUN_SUMMARY]);
  const listed: DryRunModule[] = [];
  for (const { standing, rendered } of [...modules].sort((a, b) => (a.standing.module < b.standing.module ? -1 : 1))) {
    const files: DryRunFile[] = [];
    for (const path of standing.files) {
      const file = rendered.files.get(path);
      if (file) files.push(await writeOne(dir, standing.module, file, taken));
    }
    const state = standing.state === 'applied' ? 'complete' : standing.state === 'failed' ? 'failed' : 'waiting';
    const items = rendered.items.map((i) => ({ collection: i.collection, digest: contentDigest(i.content), content: i.content }));
    listed.push({
      module: standing.module,
      ...(standing.build !== undefined ? { build: standing.build } : {}),
      state,
      ...(standing.reason !== undefined ? { reason: standing.reason } : {}),
      files,
      waiting: standing.waiting,
      items,
    });
  }
  const complete = listed.every((m) => m.state === 'complete' && m.files.every((f) => f.error === undefined));
  const summary: DryRunSummary = { node, dir, complete, timedOut, modules: listed };
  // Escaped as `--json` is (DESIGN §3): an operator may well print it; it parses back to the same summary.
  await writeFile(join(dir, DRY_RUN_SUMMARY), safeJson(summary, 2) + '\n', { mode: 0o600 });
  return summary;
}

async function writeOne(dir: string, module: string, file: FillFile, taken: Set<string>): Promise<DryRunFile> {
  const { path, mode, change, owner, fileMode, comment, digest } = file;
  const listed: DryRunFile = {
    path,
    mode,
    change,
    ...(owner !== undefined ? { owner } : {}),
    ...(fileMode !== undefined ? { fileMode } : {}),
    ...(comment !== undefined ? { comment } : {}),
    digest,
    secrets: secretNamesOf(file.content),
  };
  // A plan's path is absolute and normal (PlanSchema), so DIR + path stays under DIR.
  let written = path.slice(1);
  if (taken.has(written)) written = `${written}@${module}`;
  try {
    await mkdir(dirname(join(dir, written)), { recursive: true, mode: 0o700 });
    await writeFile(join(dir, written), contentText(file.content), { mode: 0o600, flag: 'wx' });
    taken.add(written);
    return { ...listed, written };
  } catch (err) {
    return { ...listed, error: errorText(err, { cause: true }) };
  }
}

/**
 * The mode the engine gives a file (DESIGN §9, src/engine/apply.ts): its `fileMode`, else 0600 when
 * it holds a secret part, else a managed file's own (others write it too), else 0644.
 */
function modeShown(f: DryRunFile): string {
  if (f.fileMode !== undefined) return f.fileMode;
  if (f.secrets.length > 0) return `${SECRET_FILE_MODE} (holds a secret)`;
  return f.mode === 'managed' ? `its own (${DEFAULT_FILE_MODE} when new)` : `${DEFAULT_FILE_MODE} (default)`;
}

/** The short human summary: one line per module, one per file, and the verdict; safe text (DESIGN §3), as its paths, builds and reasons come from the bus. */
export function describeDryRun(summary: DryRunSummary): string[] {
  const lines = [`dry run of ${summary.node} in ${summary.dir} (summary: ${join(summary.dir, DRY_RUN_SUMMARY)})`];
  for (const m of summary.modules) {
    const build = m.build !== undefined ? ` (build ${m.build})` : '';
    const standing = describeStanding({
      module: m.module,
      state: m.state === 'complete' ? 'applied' : m.state,
      waiting: m.waiting,
      files: [],
      ...(m.reason !== undefined ? { reason: m.reason } : {}),
    });
    lines.push(
      `${m.module}${build}: ${m.state === 'complete' ? `complete, ${m.files.length} file(s), ${m.items.length} item(s)` : standing.slice(m.module.length + 2)}`,
    );
    for (const f of m.files) {
      const how = [f.mode, f.change, modeShown(f), ...(f.owner !== undefined ? [`owner ${f.owner}`] : []), f.digest.slice(0, 19) + '…'];
      if (f.secrets.length > 0) how.push(`secrets ${f.secrets.join(',')}`);
      const where = f.error !== undefined ? ` NOT WRITTEN: ${f.error}` : f.written !== f.path.slice(1) ? ` → ${f.written}` : '';
      lines.push(`  ${f.path}${where}  ${how.join(' ')}`);
    }
  }
  const open = summary.modules.filter((m) => m.state !== 'complete' || m.files.some((f) => f.error !== undefined)).length;
  lines.push(
    summary.complete
      ? `${summary.node}: ${summary.modules.length} module(s) rendered completely`
      : `${summary.node}: ${open} of ${summary.modules.length} module(s) not complete${summary.timedOut ? ' when the time ran out' : ''}`,
  );
  return lines.map(safeText);
}
