// Watching the engine's secrets directory for knocks (DESIGN §9): a secret that arrives may let a
// refused write through, and one that is replaced (a rotation) must be filled again. Nothing met
// there is fatal: a directory the engine cannot watch, or a file it cannot read — what `sudo install
// -m 0600` makes, root's — is said once and left alone; a fill naming that file is refused.
import { accessSync, constants, readdirSync, unwatchFile, watch, watchFile, type FSWatcher, type Stats } from 'node:fs';
import { join } from 'node:path';
import { errorText } from '../shared/errors.ts';
import type { Logger } from '../shared/log.ts';

/** A burst of secret writes gives one knock. */
export const SECRETS_SETTLE_MS = 50;
/** How often a secret the engine has read is stat'ed for a rotation. */
export const SECRETS_POLL_MS = 100;
/** How deep under the secrets directory a directory is watched: vault names are six segments at most. */
const MAX_DEPTH = 16;
/** How many directories are watched at most, so a secrets directory filled by mistake cannot exhaust inotify. */
const MAX_DIRECTORIES = 10_000;

/**
 * Calls `onChange` (once per burst) when an entry under `dir` arrives, changes or goes. Each
 * directory is watched on its own, not by a recursive fs.watch: Node's recursive watch on Linux adds
 * an inotify watch on every file, which a file the engine may not read refuses (EACCES) with an
 * 'error' no one can catch in time, ending the process. A directory needs only its own read right.
 */
export function watchSecretsTree(dir: string, onChange: () => void, log: Logger): () => void {
  const watchers = new Map<string, FSWatcher>();
  const said = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const sayOnce = (path: string, line: string) => {
    if (said.has(path)) return;
    said.add(path);
    log.warn(line);
  };
  const cannotWatch = (path: string, err: unknown) =>
    sayOnce(path, `cannot watch ${path} (${errorText(err)}): a secret that arrives there is picked up on the next fill only`);
  const burst = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      rescan();
      onChange();
    }, SECRETS_SETTLE_MS);
  };
  const add = (path: string) => {
    if (watchers.has(path)) return;
    try {
      const watcher = watch(path, { persistent: false }, burst);
      watcher.on('error', (err) => {
        watcher.close();
        watchers.delete(path);
        cannotWatch(path, err);
      });
      watchers.set(path, watcher);
      said.delete(path);
    } catch (err) {
      cannotWatch(path, err);
    }
  };
  const rescan = () => {
    if (closed) return;
    const found = walk(dir, {
      onUnreadableDir: cannotWatch,
      onUnreadableFile: (file, err) => sayOnce(file, unreadableLine(file, err)),
      onReadable: (p) => said.delete(p),
    });
    for (const path of found) add(path);
    for (const [path, watcher] of watchers) {
      if (found.has(path)) continue;
      watcher.close();
      watchers.delete(path);
    }
  };
  rescan();
  return () => {
    closed = true;
    clearTimeout(timer);
    for (const watcher of watchers.values()) watcher.close();
    watchers.clear();
  };
}

/** What the walk says of what it meets. */
type WalkEvents = {
  onUnreadableDir(path: string, err: unknown): void;
  onUnreadableFile(path: string, err: unknown): void;
  /** A file or directory that can be read (again). */
  onReadable(path: string): void;
};

/** Every directory under `root` (itself included) the engine can list, links not followed; each file checked for reading. */
function walk(root: string, events: WalkEvents): Set<string> {
  const found = new Set<string>();
  const visit = (path: string, depth: number) => {
    if (found.size >= MAX_DIRECTORIES || depth > MAX_DEPTH) return;
    let entries;
    try {
      entries = readdirSync(path, { withFileTypes: true });
    } catch (err) {
      return events.onUnreadableDir(path, err);
    }
    found.add(path);
    events.onReadable(path);
    for (const entry of entries) {
      const child = join(path, entry.name);
      if (entry.isDirectory()) visit(child, depth + 1);
      else if (entry.isFile()) checkReadable(child, events);
    }
  };
  visit(root, 0);
  return found;
}

function checkReadable(file: string, events: WalkEvents): void {
  try {
    accessSync(file, constants.R_OK);
    events.onReadable(file);
  } catch (err) {
    events.onUnreadableFile(file, err);
  }
}

/** The line said of a secret file the engine may not read: a fill naming it is refused, and how to mend it. */
export function unreadableLine(file: string, err: unknown): string {
  const code = (err as NodeJS.ErrnoException).code ?? errorText(err);
  const who = typeof process.getuid === 'function' ? ` (uid ${process.getuid()})` : '';
  return `secret file ${file} is unreadable by the engine${who}: ${code}; a fill naming it is refused until the engine's user may read it (chown it to that user, mode 0600)`;
}

/**
 * Polls every secret file the engine has read (a rotation replaces it: a new inode or mtime) and
 * knocks when one changes. A directory watch sees a secret that arrives, but not always one replaced
 * by rename under a directory watched late; a stat per read file does.
 */
export function watchReadSecrets(onChange: (file: string) => void, pollMs = SECRETS_POLL_MS): { onRead(file: string): void; stop(): void } {
  const watched = new Map<string, (curr: Stats, prev: Stats) => void>();
  return {
    onRead(file) {
      if (watched.has(file)) return;
      const onStat = (curr: Stats, prev: Stats) => {
        if (curr.ino !== prev.ino || curr.mtimeMs !== prev.mtimeMs || curr.size !== prev.size) onChange(file);
      };
      watched.set(file, onStat);
      watchFile(file, { interval: pollMs, persistent: false }, onStat);
    },
    stop() {
      for (const [file, onStat] of watched) unwatchFile(file, onStat);
      watched.clear();
    },
  };
}
