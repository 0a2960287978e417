// Watching the files the engine answers for (DESIGN §14) through their directories: one fs.watch
// per directory. The engine writes by temp file and rename, which replaces a file's inode, so a
// watch on the file itself would be lost at the engine's own first write. A directory that cannot
// be watched (inotify's watches used up, its rights taken away) has its files polled by stat.
import * as fs from 'node:fs';
import { statSync, type FSWatcher } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** How often a file is stat'ed where its directory cannot be watched: a change is still seen well within the 1 s of §14. */
export const DRIFT_POLL_MS = 500;

/** The calls of node:fs that watch and poll. */
export type WatchCalls = Pick<typeof fs, 'watch' | 'watchFile' | 'unwatchFile'>;

/** How the files are watched; tests hand in a watch that fails. */
export type DriftWatchOptions = {
  /** How often a polled file is stat'ed (DRIFT_POLL_MS). */
  pollMs?: number;
  /** node:fs's, unless a test says otherwise. */
  calls?: WatchCalls;
};

/** The files watched in one directory, and how. */
type Dir = {
  /** Its path. */
  path: string;
  /** The directory's inode and birth time when its watch was set: a directory made anew needs a new watch. */
  identity: string;
  /** Its watch saw the directory itself go (removed or moved): the watch hears nothing more. */
  gone: boolean;
  /** The watch, unless it could not be set. */
  watcher?: FSWatcher;
  /** The keys of the files watched there, by file name. */
  names: Map<string, Set<string>>;
  /** The files polled instead, by file name: their stat listeners. */
  polls: Map<string, () => void>;
};

/** The watches of the files the engine answers for; `onChange` is called with the keys of the files an event may concern. */
export class DriftWatches {
  readonly #dirs = new Map<string, Dir>();
  readonly #calls: WatchCalls;

  constructor(
    private readonly onChange: (keys: ReadonlySet<string>) => void,
    private readonly onCannotWatch: (dir: string, err: unknown) => void,
    private readonly opts: DriftWatchOptions = {},
  ) {
    this.#calls = opts.calls ?? fs;
  }

  /** Watches `target` for `key`; a directory whose inode changed since its watch was set is watched anew. */
  add(target: string, key: string): void {
    const dir = dirname(target);
    const name = basename(target);
    let entry = this.#dirs.get(dir);
    const identity = identityOf(dir);
    if (entry && (entry.gone || entry.identity !== identity)) {
      this.#stop(entry);
      entry = this.#open(dir, identity, entry.names);
    }
    entry ??= this.#open(dir, identity, new Map());
    const keys = entry.names.get(name) ?? new Set();
    keys.add(key);
    entry.names.set(name, keys);
    if (!entry.watcher) this.#poll(dir, entry, name);
  }

  /** Stops watching `target` for `key`; the directory's watch goes with its last file. */
  remove(target: string, key: string): void {
    const dir = dirname(target);
    const name = basename(target);
    const entry = this.#dirs.get(dir);
    const keys = entry?.names.get(name);
    if (!entry || !keys?.delete(key) || keys.size > 0) return;
    entry.names.delete(name);
    const poll = entry.polls.get(name);
    if (poll) this.#calls.unwatchFile(join(dir, name), poll);
    entry.polls.delete(name);
    if (entry.names.size > 0) return;
    this.#stop(entry);
    this.#dirs.delete(dir);
  }

  /** Closes every watch and poll. */
  close(): void {
    for (const entry of this.#dirs.values()) this.#stop(entry);
    this.#dirs.clear();
  }

  /** Sets the directory's watch, or, when it cannot be set, leaves its files to be polled. */
  #open(dir: string, identity: string, names: Map<string, Set<string>>): Dir {
    const entry: Dir = { path: dir, identity, gone: false, names, polls: new Map() };
    const self = basename(dir);
    this.#dirs.set(dir, entry);
    try {
      const watcher = this.#calls.watch(dir, { persistent: false }, (_event, name) => {
        // The directory's own removal comes under its own name (and a file of that name there may be watched too).
        if (name === self) entry.gone = true;
        // No name (some kernels' overflow) may concern any file there.
        const keys = name === null ? new Set([...entry.names.values()].flatMap((k) => [...k])) : entry.names.get(name);
        if (keys && keys.size > 0) this.onChange(keys);
      });
      // A watch that fails later (the directory's rights taken away) ends; its files are polled from then on.
      watcher.on('error', (err) => {
        watcher.close();
        entry.watcher = undefined;
        this.onCannotWatch(dir, err);
        for (const name of entry.names.keys()) this.#poll(dir, entry, name);
      });
      entry.watcher = watcher;
    } catch (err) {
      this.onCannotWatch(dir, err);
    }
    for (const name of names.keys()) if (!entry.watcher) this.#poll(dir, entry, name);
    return entry;
  }

  #poll(dir: string, entry: Dir, name: string): void {
    if (entry.polls.has(name)) return;
    // Called only when the stat differs (inode, size, times, mode, owner), as an event would be.
    const listener = () => {
      const keys = entry.names.get(name);
      if (keys && keys.size > 0) this.onChange(keys);
    };
    entry.polls.set(name, listener);
    this.#calls.watchFile(join(dir, name), { interval: this.opts.pollMs ?? DRIFT_POLL_MS, persistent: false }, listener);
  }

  #stop(entry: Dir): void {
    entry.watcher?.close();
    entry.watcher = undefined;
    for (const [name, listener] of entry.polls) this.#calls.unwatchFile(join(entry.path, name), listener);
    entry.polls.clear();
  }
}

// A directory removed and made again may get its inode number back (ext4 reuses it at once): its birth
// time tells them apart where the file system keeps one. One that is not there has none: the next
// add, once the engine has made it, watches it anew.
function identityOf(dir: string): string {
  try {
    const info = statSync(dir);
    return `${info.ino}:${info.birthtimeMs}`;
  } catch {
    return 'absent';
  }
}
