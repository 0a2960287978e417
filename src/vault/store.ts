// The reference vault's store (DESIGN §13): one file per vault name under its directory
// (`<dir>/pair/pg/database/n1/web`), 0600 in 0700 directories, the same layout as the reference
// engine's --secrets directory, each owned as the directory is when written by root (`rotate`). A name is parsed segment by segment before it becomes a path, so it
// never leaves the directory, and no link below the directory is followed. Every write is atomic
// (temp file, fsync, rename); a provision's credential is made on its first ask, once.
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { lchown, link, mkdir, open, realpath, rename, stat, unlink } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { errorText } from '../shared/base/errors.ts';
import { readRegularFileIfThere } from '../shared/base/regular-file.ts';
import { fail, ok, type Parsed } from '../shared/base/result.ts';
import { parseVaultName } from '../shared/contract/vault-names.ts';

/** The largest file of the store read: far past what `rotate` writes (64 KiB), short of filling the vault's memory. */
export const MAX_STORED_BYTES = 1024 * 1024;

/** How many random bytes a credential the vault makes holds (base64url: 43 characters). */
export const CREDENTIAL_BYTES = 32;

/** A new credential: CREDENTIAL_BYTES random bytes, base64url. */
export function newCredential(): string {
  return randomBytes(CREDENTIAL_BYTES).toString('base64url');
}

/** What the store did to hand a credential: read it, or made it on this first ask. */
export type Handed = { value: string; made: boolean };

/** The vault's files under one directory; see the file's comment. */
export class VaultStore {
  /** The directory, every link in its own path resolved. */
  readonly dir: string;
  /** Who every file and directory written is given to: the directory's owner, when this process runs as root (else none: it writes as itself). */
  readonly #owner: Owner | undefined;

  private constructor(dir: string, owner: Owner | undefined) {
    this.dir = dir;
    this.#owner = owner;
  }

  /**
   * Opens the store at `dir`, made (0700) when missing; rejects when it is not a directory. `warn`
   * is told when others than its owner may enter it (the operator's choice, said, not changed).
   */
  static async open(dir: string, warn: (line: string) => void = () => {}, { make = true }: { make?: boolean } = {}): Promise<VaultStore> {
    if (make) await mkdir(dir, { recursive: true, mode: 0o700 });
    else if (!(await stat(dir).catch(() => undefined)))
      throw new Error(
        `--store ${dir}: no vault store there: rotate writes to the store the running vault uses (its --store; the unit's is /var/lib/mesh-vault); nothing rotated`,
      );
    const real = await realpath(dir);
    const { mode, uid, gid } = await stat(real);
    if ((mode & constants.S_IFMT) !== constants.S_IFDIR) throw new Error(`--store ${dir} is not a directory`);
    if ((mode & 0o077) !== 0)
      warn(`--store ${dir} has mode ${(mode & 0o777).toString(8).padStart(4, '0')}: others than its owner may enter it (0700 keeps them out)`);
    // `rotate` run as root writes for the vault's own user (its unit's), who could not read a root-owned 0600 file.
    return new VaultStore(real, process.getuid?.() === 0 ? { uid, gid } : undefined);
  }

  /**
   * The credential `name` names: a module's secret is read (an operator puts it, the vault never
   * makes one); a provision's credential is read, or made when it is not there yet — two asks at
   * once make one, whichever process asks.
   */
  async credential(name: string): Promise<Parsed<Handed>> {
    const parsed = parseVaultName(name);
    if (!parsed.ok) return fail(`vault name ${parsed.reason}`);
    const read = await this.#read(name);
    if (read.state === 'value') return ok({ value: read.value, made: false });
    if (read.state === 'refused') return fail(read.reason);
    if (parsed.value.kind === 'module') return fail(`${name} is not in the vault (an operator puts a module's secret; none is made)`);
    const made = await this.#write(name, newCredential(), false);
    if (!made.ok) return made;
    if (made.value === 'written') {
      const again = await this.#read(name);
      return again.state === 'value' ? ok({ value: again.value, made: true }) : fail(`${name} could not be read back after it was made`);
    }
    // Another ask made it first: its value is the one.
    const theirs = await this.#read(name);
    return theirs.state === 'value' ? ok({ value: theirs.value, made: false }) : fail(theirs.state === 'refused' ? theirs.reason : `${name} vanished`);
  }

  /** Whether the store holds a value for `name` (a link or an unreadable file is none). */
  async holds(name: string): Promise<boolean> {
    return (await this.#read(name)).state === 'value';
  }

  /** Replaces (or puts) the value of `name`, atomically; the reason says why it could not. */
  async put(name: string, value: string): Promise<Parsed<void>> {
    const parsed = parseVaultName(name);
    if (!parsed.ok) return fail(`vault name ${parsed.reason}`);
    const written = await this.#write(name, value, true);
    return written.ok ? ok(undefined) : written;
  }

  /** The file of a parsed name: under the directory by construction (no segment is empty, `.` or `..`). */
  #path(name: string): string {
    return join(this.dir, ...name.split('/'));
  }

  /** Reads `name`: its value, missing, or refused (a link, not a regular file, unreadable). */
  async #read(name: string): Promise<{ state: 'value'; value: string } | { state: 'missing' } | { state: 'refused'; reason: string }> {
    const file = this.#path(name);
    const linked = await this.#linkedDirectory(dirname(file));
    if (linked === 'missing') return { state: 'missing' };
    if (linked !== undefined) return { state: 'refused', reason: `${name}: ${linked}` };
    // Without following a last link, never waiting on a FIFO swapped in, within its limit: synchronous (a file of the store is small).
    const read = readRegularFileIfThere(file, MAX_STORED_BYTES, { noFollow: true, name });
    if (read.state === 'absent') return { state: 'missing' };
    if (read.state === 'refused') {
      if (read.reason === `${name} is a symbolic link, not a regular file`) return { state: 'refused', reason: `${name} is a link: refused` };
      return { state: 'refused', reason: read.code ? `${name} is unreadable (${read.code})` : read.reason };
    }
    // One trailing newline is an editor's, not the secret's (the reference engine reads it so too).
    return {
      state: 'value',
      value: Buffer.from(read.bytes)
        .toString('utf8')
        .replace(/\r?\n$/, ''),
    };
  }

  /** Says why the directory `dir` (below the store) is reached through a link, `missing` when it is not there, nothing when it is plain. */
  async #linkedDirectory(dir: string): Promise<string | 'missing' | undefined> {
    try {
      return (await realpath(dir)) === dir ? undefined : 'a directory on its path is a link: refused';
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : `its directory is unreadable (${codeOf(err)})`;
    }
  }

  /**
   * Writes `value` as `name` through a temp file beside it (fsync'd, mode 0600): renamed over the
   * old file when `replace`, else linked in only when no file is there (`exists`).
   */
  async #write(name: string, value: string, replace: boolean): Promise<Parsed<'written' | 'exists'>> {
    const file = this.#path(name);
    const dir = dirname(file);
    // A vault name's segment never starts with a dot, so no temp file is ever a name.
    const temp = join(dir, `.${name.split('/').at(-1)}.${randomBytes(6).toString('hex')}.tmp`);
    try {
      const made = await mkdir(dir, { recursive: true, mode: 0o700 });
      const linked = await this.#linkedDirectory(dir);
      if (linked !== undefined) return fail(`${name}: ${linked === 'missing' ? 'its directory vanished' : linked}`);
      if (made !== undefined && this.#owner) await chownDown(made, dir, this.#owner);
      const handle = await open(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
      try {
        if (this.#owner) await handle.chown(this.#owner.uid, this.#owner.gid);
        await handle.writeFile(value);
        await handle.sync();
      } finally {
        await handle.close();
      }
      const outcome = await (replace ? rename(temp, file) : link(temp, file)).then(
        () => 'written' as const,
        (err: NodeJS.ErrnoException) => {
          if (!replace && err.code === 'EEXIST') return 'exists' as const;
          throw err;
        },
      );
      await syncDirectory(dir);
      return ok(outcome);
    } catch (err) {
      return fail(`${name} could not be written (${codeOf(err)})`);
    } finally {
      // Renamed away already when replacing; a link leaves it behind, as does a failure.
      await unlink(temp).catch(() => {});
    }
  }
}

/** A file's owner and group. */
type Owner = { uid: number; gid: number };

/** Gives `first` (a directory just made) and every directory below it down to `last` to `owner`; links are not followed. */
async function chownDown(first: string, last: string, owner: Owner): Promise<void> {
  let at = first;
  await lchown(at, owner.uid, owner.gid);
  for (const segment of relative(first, last).split(sep).filter(Boolean)) {
    at = join(at, segment);
    await lchown(at, owner.uid, owner.gid);
  }
}

/** An error's code (a reply names no path of the vault's machine), or its text when it has none. */
function codeOf(err: unknown): string {
  return (err as NodeJS.ErrnoException).code ?? errorText(err);
}

/** Makes a rename or link in `dir` durable. */
async function syncDirectory(dir: string): Promise<void> {
  const handle = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
