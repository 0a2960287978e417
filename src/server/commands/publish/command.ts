// `node dist/server.js publish DIR|ARCHIVE --composition FILE [--build B] [--dry-run]` (DESIGN §13):
// reads the archive and the composition, refuses — every problem a line, nothing written — what a
// node or the seat would refuse, then stores the archive and the composition that names it.
import { createHash } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { BucketMissingError, BucketRefusedError } from '../../../shared/bus/bucket-bind.ts';
import { MODULES } from '../../../shared/contract/buckets.ts';
import { errorText, isPermissionViolation } from '../../../shared/base/errors.ts';
import { MAX_SUBJECT_BYTES } from '../../../shared/contract/limits.ts';
import { CompositionSchema } from '../../../shared/contract/composition.ts';
import { decodeJson } from '../../../shared/contract/decode.ts';
import type { PublishRequest } from '../../options.ts';
import { readModuleArchive, type ModuleArchive } from './archive.ts';
import { readCompositionFile, type CheckedComposition } from './composition-file.ts';
import { judgePublish } from './judge.ts';
import { storePublication, type Publication } from './store.ts';

/** Runs `publish`: 0 when written (or, with --dry-run, when it would be), 1 when refused or the bus fails, 2 when a file cannot be read. */
export async function runPublish(
  req: PublishRequest,
  connect: () => Promise<NatsConnection>,
  out: (line: string) => void,
  err: (line: string) => void,
): Promise<number> {
  const prepared = await preparePublication(req, err);
  if (typeof prepared === 'number') return prepared;
  const p = prepared;
  const archiveLine = `archive ${p.name} in ${p.archives}: ${p.bytes.length} bytes, ${digestOf(p.bytes)}`;
  if (req.dryRun) {
    out(`would put ${archiveLine}`);
    out(`would put composition ${p.module} in ${MODULES}: ${new TextDecoder().decode(p.composition)}`);
    return 0;
  }
  const nc = await connect();
  try {
    const stored = await storePublication(nc, p, (line) => err(`warning: ${line}`));
    out(`put ${archiveLine}`);
    out(`put composition ${p.module} build ${p.build} in ${MODULES} (revision ${stored.revision})`);
    return 0;
  } catch (e) {
    // A bucket that holds more than its own subject, or missing where this login may not make it: said, never used.
    if (e instanceof BucketRefusedError || e instanceof BucketMissingError) return (err(`publish refused: ${errorText(e)}; nothing written`), 1);
    // A stream this login may not read comes back as text alone (bucket-bind.ts keeps the reason, not the error).
    if (!isPermissionViolation(e) && !/Permissions Violation/.test(errorText(e))) throw e;
    err(`publish needs the admin login (its seed, admin.nk, as --nkey): this login may not write the catalogue (${errorText(e)})`);
    return 1;
  } finally {
    await nc.close();
  }
}

/**
 * Reads and judges the archive and the composition: what to write, or the exit code once every
 * problem is said (warnings are said either way) — 2 when a file cannot be read, 1 when refused.
 */
async function preparePublication(req: PublishRequest, err: (line: string) => void): Promise<Publication | number> {
  const [archive, composition] = await Promise.all([readModuleArchive(req.input), readCompositionFile(req.composition, req.build)]);
  for (const unreadable of [archive, composition]) if (!unreadable.ok && unreadable.unreadable) return (err(problemsOf(unreadable)[0]!), 2);
  const errors = composition.ok ? [] : composition.problems.map((p) => `${req.composition}: ${p}`);
  if (!archive.ok) errors.push(archive.reason);
  const verdict = archive.ok ? judgePublish(archive.value, composition.ok ? composition.value : undefined) : { errors: [], warnings: [] };
  errors.push(...verdict.errors);
  const publication = archive.ok && composition.ok && errors.length === 0 ? publicationOf(req, archive.value, composition.value) : undefined;
  if (publication && !publication.ok) errors.push(`${req.composition}: as stored, ${publication.reason}`);
  for (const w of verdict.warnings) err(`warning: ${w}`);
  if (publication?.ok) return publication.value;
  for (const e of errors) err(e);
  err(`publish refused: ${errors.length} problem(s); nothing written`);
  return 1;
}

/** The archive's name, bytes and ref filled into the composition, checked as the seat will read it (schema and size). */
function publicationOf(
  req: PublishRequest,
  archive: ModuleArchive,
  composition: CheckedComposition,
): { ok: true; value: Publication } | { ok: false; reason: string } {
  const name = `${composition.module}-${composition.build}.tar.gz`;
  const nameBad = archiveNameProblem(req.archives, name);
  if (nameBad !== undefined) return { ok: false, reason: nameBad };
  const { module, build, published, ...rest } = composition.value;
  const value = { module, build, published, archive: { ref: `obj://${req.archives}/${name}`, digest: digestOf(archive.bytes) }, ...rest };
  const bytes = new TextEncoder().encode(JSON.stringify(value));
  const read = decodeJson(CompositionSchema, bytes);
  if (!read.ok) return read;
  return { ok: true, value: { archives: req.archives, name, bytes: archive.bytes, module: composition.module, build: composition.build, composition: bytes } };
}

/**
 * Says why the object store cannot hold an archive of this name: nats.js carries it base64url in a
 * subject (`$O.<bucket>.M.<name>`), which past MAX_SUBJECT_BYTES (DESIGN §3) the bus would refuse
 * by dropping the connection; nothing when it fits.
 */
function archiveNameProblem(archives: string, name: string): string | undefined {
  const bytes = `$O.${archives}.M.${Buffer.from(name).toString('base64url')}`.length;
  if (bytes <= MAX_SUBJECT_BYTES) return undefined;
  return `the archive name ${name.slice(0, 80)}… makes a subject of ${bytes} bytes in the object store ${archives}, past the limit of ${MAX_SUBJECT_BYTES} bytes`;
}

function digestOf(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

function problemsOf(read: { ok: false; problems: string[] } | { ok: false; reason: string }): string[] {
  return 'problems' in read ? read.problems : [read.reason];
}
