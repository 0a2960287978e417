// What `assign` says of the module's catalogue entry (issue 31 item 18): an assignment is checked
// against its grammars only (DESIGN §13), yet a module never published is held by the seat without a
// word at the command line; a warning says so, and the assignment stands (exit 0).
import type { NatsConnection } from '@nats-io/transport-node';
import { MODULES } from '../../../shared/contract/buckets.ts';
import { bucketManager } from '../../../shared/bus/bucket-bind.ts';
import { kvBucket, streamOf } from '../../../shared/contract/bucket-spec.ts';
import { openKv } from '../../../shared/bus/bus.ts';
import { isStreamNotFound } from '../../../shared/bus/jetstream-errors.ts';
import { MAX_PLAN_BYTES, parseBoundedJson } from '../../../shared/contract/limits.ts';

/** How long the look at the catalogue may take: a warning is not worth a long wait. */
const CATALOGUE_TIMEOUT_MS = 2000;

/**
 * A warning when the catalogue holds no composition of `module` or one not published yet;
 * undefined when it holds a published one, or when the catalogue cannot be read (what the seat
 * makes of the module, `status` shows).
 */
export async function catalogueWarning(nc: NatsConnection, module: string): Promise<string | undefined> {
  const never = `module ${module} was never published (${MODULES} holds no ${module}): the seat holds its plans until \`server.js publish\` puts it`;
  let entry;
  try {
    // The stream first: a direct get of a stream not there goes unanswered until its timeout.
    await (await bucketManager(nc, CATALOGUE_TIMEOUT_MS)).streams.info(streamOf(kvBucket(MODULES)));
    entry = await (await openKv(nc, MODULES)).get(module);
  } catch (err) {
    return isStreamNotFound(err) ? never : undefined;
  }
  if (entry === null || entry.operation !== 'PUT') return never;
  const read = parseBoundedJson(entry.value, { maxBytes: MAX_PLAN_BYTES });
  if (!read.ok || typeof read.value !== 'object' || read.value === null) return undefined;
  const { published, build } = read.value as { published?: unknown; build?: unknown };
  if (published !== false) return undefined;
  return `module ${module} build ${String(build)} is not published yet (${MODULES} ${module}: published false): the seat holds its plans until it is`;
}
