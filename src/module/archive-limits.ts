// What an archive may hold (DESIGN §3, §7.1): sizes and counts, checked while fetching and unpacking.

/** Limits on what an archive may hold. */
export type ArchiveLimits = {
  /** Most bytes of the archive as fetched (compressed or not), and of all its files unpacked together. */
  maxArchiveBytes: number;
  /** Most bytes of one file. */
  maxEntryBytes: number;
  /** Most entries of any type (files, directories, …). */
  maxEntries: number;
};

const MiB = 1024 * 1024;

/** 64 MiB per archive (fetched, and unpacked in total), 16 MiB per file, 10 000 entries. */
export const DEFAULT_ARCHIVE_LIMITS: ArchiveLimits = { maxArchiveBytes: 64 * MiB, maxEntryBytes: 16 * MiB, maxEntries: 10_000 };
