// A file's `owner` as uid/gid: applied only when the engine runs as root, since nobody else may give a file away.
import { readFile } from 'node:fs/promises';

/** The uid and primary gid a file is given. */
export type Ownership = { uid: number; gid: number };

/** Finds a user in a passwd-format text, by name or by numeric uid. */
export function findUser(passwd: string, user: string): Ownership | undefined {
  for (const line of passwd.split('\n')) {
    const [name, , uid, gid] = line.split(':');
    if (name === user || (/^\d+$/.test(user) && uid === user)) {
      if (uid !== undefined && gid !== undefined) return { uid: Number(uid), gid: Number(gid) };
    }
  }
  if (/^\d+$/.test(user)) return { uid: Number(user), gid: Number(user) };
  return undefined;
}

/**
 * What to chown a file to: nothing when no owner is asked or the engine is not root (nobody else
 * may give a file away; the file is the engine's user's), else the user's uid and primary gid, or
 * `unknown` naming an owner this node has no user of (the file is then refused).
 */
export async function resolveOwner(owner: string | undefined, passwdFile = '/etc/passwd'): Promise<{ ownership?: Ownership; unknown?: string }> {
  if (owner === undefined || process.getuid?.() !== 0) return {};
  let passwd = '';
  try {
    passwd = await readFile(passwdFile, 'utf8');
  } catch {
    // An unreadable passwd leaves only numeric owners resolvable.
  }
  const found = findUser(passwd, owner);
  return found ? { ownership: found } : { unknown: owner };
}
