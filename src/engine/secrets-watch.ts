// Watching the engine's secrets directory for knocks (DESIGN §9): a secret that arrives may let a
// refused write through, and one that is replaced (a rotation) must be filled again. Nothing met
// there is fatal: a directory the engine cannot watch, or a file it cannot read — what `sudo install
// -m 0600` makes, root's — is said once and left alone; a fill naming that file is refused.
import { accessSync, constants, readdirSync, unwatchFile, watch, watchFile, type FSWatcher, type Stats } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { errorText } from '../shared/base/errors.ts';
import type { Logger } from '../shared/cli/log.ts';

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
  const tree = new SecretsTree(dir, onChange, log);
  tree.rescan();
  return () => tree.stop();
}

/** The watches of a secrets directory, one per directory, kept in step with the tree by a rescan after each burst. */
class SecretsTree {
  private readonly watchers = new Map<string, FSWatcher>();
  /** The paths said unwatchable or unreadable, so each is said once until it mends. */
  private readonly said = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly dir: string,
    private readonly onChange: () => void,
    private readonly log: Logger,
  ) {}

  /** Watches every directory the walk finds, drops those gone, and says what cannot be read. */
  rescan(): void {
    if (this.closed) return;
    const found = walk(this.dir, {
      onUnreadableDir: (path, err) => this.cannotWatch(path, err),
      onUnreadableFile: (file, err) => this.sayOnce(file, unreadableLine(file, err)),
      onReadable: (path) => this.said.delete(path),
    });
    for (const path of found) this.add(path);
    for (const [path, watcher] of this.watchers) {
      if (found.has(path)) continue;
      watcher.close();
      this.watchers.delete(path);
    }
  }

  stop(): void {
    this.closed = true;
    clearTimeout(this.timer);
    for (const watcher of this.watchers.values()) watcher.close();
    this.watchers.clear();
  }

  /** A burst of events gives one rescan and one knock, SECRETS_SETTLE_MS after its last event. */
  private burst(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.rescan();
      this.onChange();
    }, SECRETS_SETTLE_MS);
  }

  private add(path: string): void {
    if (this.watchers.has(path)) return;
    try {
      const watcher = watch(path, { persistent: false }, (_event, filename) => {
        if (filename !== null && !rotatesByPoll(`${relative(this.dir, join(path, filename)).split(sep).join('/')}/`)) return;
        this.burst();
      });
      // An error after the start (the directory's rights taken away) ends that watch, never the engine.
      watcher.on('error', (err) => {
        watcher.close();
        this.watchers.delete(path);
        this.cannotWatch(path, err);
      });
      this.watchers.set(path, watcher);
      this.said.delete(path);
    } catch (err) {
      this.cannotWatch(path, err);
    }
  }

  private cannotWatch(path: string, err: unknown): void {
    // A directory not made yet (the engine started before the vault made its store) is no fault.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      this.sayOnce(path, `${path} is not there yet: a secret put there is read at the next fill that names it`, 'notice');
    else this.sayOnce(path, `cannot watch ${path} (${errorText(err)}): a secret that arrives there is picked up on the next fill only`);
  }

  private sayOnce(path: string, line: string, level: 'warn' | 'notice' = 'warn'): void {
    if (this.said.has(path)) return;
    this.said.add(path);
    this.log[level](line);
  }
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
 * Whether the engine picks up a rotation of a secret it has read by itself: a module's own secret,
 * which no provider takes. A provision's credential (`pair/…`) is read again only when the client
 * sends its file, which waits until the provider has set the new one in its service: a knock here
 * would fill the consumer with a credential its provider has not set yet.
 */
export function rotatesByPoll(vaultName: string): boolean {
  return !vaultName.startsWith('pair/');
}

/**
 * Polls every secret file the engine has read (a rotation replaces it: a new inode or mtime) and
 * knocks when one changes — or, for one that does not `rotate` by the engine's poll, only when it
 * arrives after a read found it missing. A directory watch sees a secret that arrives, but not
 * always one replaced by rename under a directory watched late; a stat per read file does.
 */
export function watchReadSecrets(onChange: (file: string) => void, pollMs = SECRETS_POLL_MS): { onRead(file: string, rotates: boolean): void; stop(): void } {
  const watched = new Map<string, (curr: Stats, prev: Stats) => void>();
  return {
    onRead(file, rotates) {
      if (watched.has(file)) return;
      const onStat = (curr: Stats, prev: Stats) => {
        // A missing file stats as zeros.
        const arrived = prev.ino === 0 && curr.ino !== 0;
        const changed = curr.ino !== prev.ino || curr.mtimeMs !== prev.mtimeMs || curr.size !== prev.size;
        if (arrived || (rotates && changed)) onChange(file);
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
