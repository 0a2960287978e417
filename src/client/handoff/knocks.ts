// A knock (DESIGN §9): the engine's socket path made again or touched, seen by polling the path.
import { unwatchFile, watchFile, type Stats } from 'node:fs';
import type { Logger } from '../../shared/cli/log.ts';

/** Polls the socket path; a new inode or mtime on a present path is a knock, handed its mtime. Returns the stop. */
export function watchKnocks(socketPath: string, pollMs: number, log: Logger, onKnock: (mtimeMs: number) => void): () => void {
  // A zero inode means the path is absent: the engine went away, which is no knock.
  const onStat = (curr: Stats, prev: Stats) => {
    if (curr.ino === 0) return;
    if (curr.ino === prev.ino && curr.mtimeMs === prev.mtimeMs) return;
    log.info(`engine ${socketPath}: knock`);
    onKnock(curr.mtimeMs);
  };
  watchFile(socketPath, { interval: pollMs, persistent: false }, onStat);
  return () => unwatchFile(socketPath, onStat);
}
