// `mesh-provisioner query <what>`: asks the seat's verb page by page, then prints a table or one JSON object.
import { PROVISIONING_VERB } from '../../../shared/contract/subjects.ts';
import type { NatsConnection } from '@nats-io/transport-node';
import { jsonBytes } from '../../../shared/base/bytes.ts';
import { MAX_JSON_DEPTH, parseBoundedJson } from '../../../shared/contract/limits.ts';
import { safeCell, safeJson, safeText } from '../../../shared/cli/safe-text.ts';
import { BUSY, DEFAULT_MAX_PAYLOAD, READ_TIMEOUT_MS, REPLY_NESTING, SEAT_READ_FAILURE, type VerbReply } from '../../../shared/contract/verb.ts';
import { compareKeys } from '../../../shared/contract/keys.ts';
import type { QueryArgs } from '../../options.ts';
import { errorText, isNoResponders, isPermissionViolation, isTimeout } from '../../../shared/base/errors.ts';
import { seatWaitsForInit } from '../before-init.ts';

/**
 * How long one page may take to come back: past the seat's own read of a bucket (READ_TIMEOUT_MS),
 * so that when the bus is slow to the seat (a server just lost) its answer naming the bucket
 * arrives, not a bare "did not answer".
 */
export const DEFAULT_QUERY_TIMEOUT_MS = READ_TIMEOUT_MS + 5000;

type Gathered = Pick<VerbReply, 'what' | 'entries' | 'outOfShape'>;
/** Why asking the verb failed, with the exit code it gives: 2 for a request the seat refused, 1 otherwise. */
export type QueryFailure = {
  code: number;
  message: string;
  /** Set when the bus refused this login the ask: a command that needs another login than query's says its own. */
  refused?: { by: string };
};

/** Runs `query <what> [--node N] [--module M] [--collection C] [--contributor X] [--json] [--limit N]`: asks the verb, follows `next` to the end, prints a table (or JSON lines). Returns the exit code. */
export async function runQuery(nc: NatsConnection, args: QueryArgs, out: (line: string) => void, err: (line: string) => void = out): Promise<number> {
  const { json: _json, ...fields } = args;
  const request = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
  const gathered: Gathered = { what: args.what, entries: [], outOfShape: [] };
  const failed = await forEachPage(nc, request, (reply) => {
    gathered.what = reply.what;
    gathered.entries.push(...reply.entries);
    gathered.outOfShape.push(...reply.outOfShape);
  });
  if (failed) {
    err(failed.message);
    return failed.code;
  }
  if (args.json) out(safeJson(gathered));
  else printTables(gathered, out);
  return 0;
}

/**
 * Asks the verb `request` page by page, following `next` to the end, and hands each reply to
 * `onPage` as it comes, so a caller keeps only what it makes of a page. Resolves with the failure
 * that stopped it, or undefined once the last page was handed.
 */
export async function forEachPage(
  nc: NatsConnection,
  request: Readonly<Record<string, unknown>>,
  onPage: (reply: VerbReply) => void,
): Promise<QueryFailure | undefined> {
  let after: string | undefined;
  for (;;) {
    let data: Uint8Array;
    try {
      const body = jsonBytes(after === undefined ? request : { ...request, after });
      data = (await nc.request(PROVISIONING_VERB, body, { timeout: DEFAULT_QUERY_TIMEOUT_MS })).data;
    } catch (err) {
      // The seat waits for its buckets answering nothing: before `init`, say so rather than ask whether it runs.
      const beforeInit = isNoResponders(err) ? await seatWaitsForInit(nc) : undefined;
      const refused = isPermissionViolation(err) ? { refused: { by: errorText(err) } } : {};
      return { code: 1, message: beforeInit === undefined ? verbFailure(err) : `query: ${beforeInit}`, ...refused };
    }
    const reply = readReply(data, nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD);
    if ('code' in reply) return reply;
    onPage(reply);
    if (reply.next === undefined) return undefined;
    // A cursor that does not move would page forever.
    if (after !== undefined && compareKeys(reply.next, after) <= 0) {
      return { code: 1, message: `query: the seat's cursor did not move past ${JSON.stringify(after)}` };
    }
    after = reply.next;
  }
}

/** Reads one reply within the connection's max payload and the depth a reply of checked values has. */
function readReply(data: Uint8Array, maxBytes: number): VerbReply | QueryFailure {
  const parsed = parseBoundedJson(data, { maxBytes, maxDepth: MAX_JSON_DEPTH + REPLY_NESTING });
  if (!parsed.ok) return { code: 1, message: `query: ${PROVISIONING_VERB} answered something unreadable: ${parsed.reason}` };
  const r = (parsed.value ?? {}) as Partial<VerbReply> & { error?: unknown };
  // The seat busy, or failing to read its bucket, is no refusal of the request: 1, as the bus failing is.
  if (typeof r.error === 'string') return { code: r.error === BUSY || r.error.startsWith(SEAT_READ_FAILURE) ? 1 : 2, message: `query: ${r.error}` };
  if (typeof r.what !== 'string' || !Array.isArray(r.entries) || !Array.isArray(r.outOfShape)) {
    return { code: 1, message: `query: ${PROVISIONING_VERB} answered a reply without what, entries and outOfShape` };
  }
  if (r.next !== undefined && typeof r.next !== 'string') return { code: 1, message: "query: the reply's next is not a key" };
  return r as VerbReply;
}

/** What a failed ask of the verb means for whoever ran the command. */
function verbFailure(err: unknown): string {
  if (isNoResponders(err)) return `query: nothing answers ${PROVISIONING_VERB} (is mesh-provisioner running?)`;
  if (isTimeout(err)) return `query: ${PROVISIONING_VERB} did not answer within ${DEFAULT_QUERY_TIMEOUT_MS} ms`;
  // A node's or a runner's seed given by mistake: told which logins may ask, as the input commands tell theirs.
  if (isPermissionViolation(err)) {
    return `query: this login may not ask ${PROVISIONING_VERB}: query and status need the seat's login or admin's (provisioner.nk or admin.nk, as --nkey); the bus said: ${errorText(err)}`;
  }
  return `query: asking ${PROVISIONING_VERB} failed: ${errorText(err)}`;
}

type Columns = { heads: string[]; cells(key: string, value: Record<string, unknown>): string[] };

const COLUMNS: Readonly<Record<string, Columns>> = {
  registry: {
    heads: ['KIND', 'OWNER', 'BUCKET/VERB', 'KEY'],
    cells: (key, v) => [cell(key), cell(v['owner']), cell(v['bucket'] ?? v['verb']), cell(v['key'])],
  },
  needs: {
    heads: ['NODE', 'MODULE', 'KIND', 'NAME', 'MET', 'FILES'],
    cells: (_key, v) => [cell(v['node']), cell(v['module']), cell(v['kind']), cell(v['name']), v['met'] ? 'yes' : 'no', list(v['files']).map(cell).join(',')],
  },
  applied: {
    heads: ['NODE', 'MODULE', 'STATE', 'BUILD', 'FILES', 'WAITING', 'REASON'],
    cells: (_key, v) => [
      cell(v['node']),
      cell(v['module']),
      cell(v['state']),
      cell(v['build']),
      String(list(v['files']).length),
      list(v['waiting'])
        .map((w) => `${cell((w as Record<string, unknown>)['kind'])}:${cell((w as Record<string, unknown>)['name'])}`)
        .join(','),
      cell(v['reason']),
    ],
  },
  collect: {
    heads: ['NODE', 'COLLECTION', 'CONTRIBUTOR', 'BYTES'],
    cells: (_key, v) => [
      cell(v['node']),
      cell(v['collection']),
      cell(v['contributor']),
      String(Buffer.byteLength(typeof v['content'] === 'string' ? v['content'] : '')),
    ],
  },
  health: {
    heads: ['NODE', 'MODULE', 'STATE', 'BUILD', 'SINCE', 'PASSES', 'REASON'],
    cells: (_key, v) => [cell(v['node']), cell(v['module']), cell(v['state']), cell(v['build']), cell(v['since']), cell(v['passes']), cell(v['reason'])],
  },
};

const FALLBACK: Columns = { heads: ['KEY', 'VALUE'], cells: (key, v) => [cell(key), cell(v)] };

function printTables(gathered: Gathered, out: (line: string) => void): void {
  const columns = COLUMNS[gathered.what] ?? FALLBACK;
  if (gathered.entries.length === 0) out(`(no ${gathered.what} entries)`);
  else {
    const rows = gathered.entries.map(({ key, value }) => columns.cells(key, (value ?? {}) as Record<string, unknown>));
    formatTable(columns.heads, rows).forEach((line) => out(line));
  }
  if (gathered.outOfShape.length === 0) return;
  out('');
  out(`out of shape (${gathered.outOfShape.length}):`);
  formatTable(
    ['KEY', 'REASON'],
    gathered.outOfShape.map(({ key, reason }) => [cell(key), cell(reason)]),
  ).forEach((line) => out(line));
}

/** Pads every column to its widest cell, each cell safe text (DESIGN §3) before it is measured, whoever built it. */
export function formatTable(heads: string[], rows: string[][]): string[] {
  const safeRows = rows.map((row) => row.map(safeText));
  const widths = heads.map((head, i) => Math.max(head.length, ...safeRows.map((row) => row[i]?.length ?? 0)));
  return [heads, ...safeRows].map((row) =>
    row
      .map((text, i) => text.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}

/** One line of text for a table cell, whatever the JSON held: safe text, cut past 4 KiB (DESIGN §3). */
export function cell(value: unknown): string {
  if (value === undefined || value === null) return '';
  return safeCell(typeof value === 'string' ? value : JSON.stringify(value));
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
