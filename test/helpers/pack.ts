// The archive cache's pack as a test reads and damages it (src/client/archive/pack.ts): its records
// parsed here on their own, from the format, not through the code under test.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PACK_NAME } from '../../src/client/archive/pack.ts';

/** One record of a pack: the digest's hex, where its bytes start, and the bytes. */
export type PackedRecord = { hex: string; offset: number; bytes: Buffer };

/** The pack of a cache dir. */
export function packFile(cacheDir: string): string {
  return join(cacheDir, PACK_NAME);
}

/** Every whole record of the pack in `cacheDir`, in order (none when there is no pack); bytes that are no record (a torn one) skipped. */
export function packRecords(cacheDir: string): PackedRecord[] {
  const path = packFile(cacheDir);
  if (!existsSync(path)) return [];
  const pack = readFileSync(path);
  const records: PackedRecord[] = [];
  for (let pos = 0; pos >= 0 && pos < pack.length;) {
    const newline = pack.indexOf(0x0a, pos);
    const head = /^MESHARCHIVE sha256-([0-9a-f]{64}) (\d+)$/.exec(pack.subarray(pos, newline < 0 ? pack.length : newline).toString('latin1'));
    const offset = newline + 1;
    const end = head ? offset + Number(head[2]) : -1;
    if (head && pack[end] === 0x0a && (end + 1 === pack.length || pack.subarray(end + 1, end + 13).toString('latin1') === 'MESHARCHIVE ')) {
      records.push({ hex: head[1]!, offset, bytes: pack.subarray(offset, end) });
      pos = end + 1;
    } else pos = pack.indexOf('MESHARCHIVE ', pos + 1);
  }
  return records;
}

/** The bytes of the last record of `digest` (`sha256:<hex>`) in the pack, or undefined when none. */
export function packedBytes(cacheDir: string, digest: string): Buffer | undefined {
  const hex = digest.replace('sha256:', '');
  return packRecords(cacheDir)
    .filter((r) => r.hex === hex)
    .at(-1)?.bytes;
}

/** Writes the pack again with the record of `digest` holding `bytes` instead (its length said anew): a pack that lies. */
export function rewriteRecord(cacheDir: string, digest: string, bytes: Uint8Array): void {
  const hex = digest.replace('sha256:', '');
  const parts = packRecords(cacheDir).map((r) => {
    const body = r.hex === hex ? Buffer.from(bytes) : r.bytes;
    return Buffer.concat([Buffer.from(`MESHARCHIVE sha256-${r.hex} ${body.length}\n`, 'latin1'), body, Buffer.of(0x0a)]);
  });
  writeFileSync(packFile(cacheDir), Buffer.concat(parts));
}
