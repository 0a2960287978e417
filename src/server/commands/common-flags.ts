// The flags several commands of server.js take alike: --archives (the seat, bus-config, init,
// publish) and --replicas's range (the seat, init), each judged the same way wherever it is given.
import { DEFAULT_ARCHIVES } from '../../shared/contract/buckets.ts';
import { fail, ok, type Parsed } from '../../shared/base/result.ts';
import { DEFAULT_REPLICAS } from '../options.ts';

/** `--archives BUCKET`: the object store of module archives. */
export const ARCHIVES_FLAG = {
  name: 'archives',
  env: 'MESH_ARCHIVES_BUCKET',
  type: 'string',
  arg: 'BUCKET',
  help: `object-store bucket of module archives (default ${DEFAULT_ARCHIVES})`,
} as const;

/** The copies asked, 1 to 5; a reason names `from`, the flag or the variable that gave the number. */
export function parseReplicas(given: number | undefined, from: string): Parsed<number> {
  const replicas = given ?? DEFAULT_REPLICAS;
  return replicas < 1 || replicas > 5 ? fail(`${from} must be 1 to 5, got ${replicas}`) : ok(replicas);
}

/** The archives bucket asked (DEFAULT_ARCHIVES when not), a valid bucket name. */
export function parseArchives(given: string | undefined): Parsed<string> {
  const archives = given ?? DEFAULT_ARCHIVES;
  return /^[A-Za-z0-9_-]+$/.test(archives) ? ok(archives) : fail(`--archives: "${archives}" is not a valid bucket name`);
}
