// What the consumers file asks of the helper, from its last good read, and the credentials it holds
// in every form — what no line or value the helper writes may hold (DESIGN §3).
import { readConsumersFile, wantsOf, type Want } from './consumers-file.ts';
import { CredentialMatcher } from './credential-forms.ts';

/** The consumers one helper must serve; see the file's comment. */
export class WantedList {
  readonly #file: string;
  readonly #provision: string;
  readonly #say: (level: 'notice' | 'warn' | 'error', line: string) => void;
  /** The bytes last read (null: no file), so a write of the same bytes is no change; undefined before the first read. */
  #lastBytes: Buffer | null | undefined;
  /** Why the file was last refused unread (no regular file, past the limit), so that it is said once. */
  #lastRefusal: string | undefined;
  /** What the file asks for by bound key, from its last good read; undefined until there is one. */
  wants: Map<string, Want> | undefined;
  /** The credentials of the last two good reads: a rotated-away one may still be quoted by an adapter working on it. */
  matcher = new CredentialMatcher([]);

  /** Reads `file` for `provision`; `say` hears a file that is absent, back, or malformed (never its text). */
  constructor(file: string, provision: string, say: (level: 'notice' | 'warn' | 'error', line: string) => void) {
    this.#file = file;
    this.#provision = provision;
    this.#say = say;
  }

  /**
   * Reads the file; true when what it asks for changed. A malformed or absent file keeps the last good
   * list: an absent file is not known, never "no consumers" — a mistyped path, or a file removed, must
   * not withdraw every consumer. Only a file that is there and valid withdraws (`[]` withdraws all).
   */
  async read(): Promise<boolean> {
    const read = await readConsumersFile(this.#file);
    if (read.state === 'refused') return this.#refused(read.reason);
    if (this.#lastRefusal !== undefined && read.state !== 'absent') this.#say('notice', `consumers file ${this.#file} is a regular file again: reading it`);
    this.#lastRefusal = undefined;
    const last = this.#lastBytes;
    if (read.state === 'absent') {
      if (last === null) return false;
      this.#lastBytes = null;
      const held =
        last === undefined
          ? 'nothing is served or withdrawn until it is there (is --consumers right?)'
          : this.wants
            ? `nothing is withdrawn while it is absent (keeping the last good list, ${this.wants.size} consumers)`
            : 'nothing is served or withdrawn until it is there';
      this.#say('warn', `consumers file ${this.#file} is absent: ${held}`);
      return false;
    }
    if (last && read.bytes.equals(last)) return false;
    if (last === null) this.#say('notice', `consumers file ${this.#file} is there now: reading it`);
    this.#lastBytes = read.bytes;
    if (read.state === 'malformed') {
      const kept = this.wants ? `keeping the last good list (${this.wants.size} consumers)` : 'nothing is served or withdrawn until it is fixed';
      this.#say('error', `consumers file ${this.#file} ${read.reason}: ${kept}`);
      return false;
    }
    const before = this.wants;
    this.wants = wantsOf(read.entries, this.#provision);
    this.matcher = new CredentialMatcher([...this.wants.values(), ...(before?.values() ?? [])].map((w) => w.grant.credential));
    return true;
  }

  /** The file was not read (a FIFO, a device, past the limit): said once at error, the last good list kept. */
  #refused(reason: string): false {
    if (reason === this.#lastRefusal) return false;
    this.#lastRefusal = reason;
    const kept = this.wants
      ? `keeping the last good list (${this.wants.size} consumers)`
      : 'nothing is served or withdrawn until it is a regular file within the limit';
    this.#say('error', `consumers file ${reason}: not read; ${kept}`);
    return false;
  }
}
