// What the consumers file asks of the helper, from its last good read, and the credentials it holds
// in every form — what no line or value the helper writes may hold (DESIGN §3).
import { readConsumersFile, wantsOf, type Want } from './consumers-file.ts';
import { CredentialMatcher } from './credential-forms.ts';

/** The consumers one helper must serve; see the file's comment. */
export class WantedList {
  readonly #file: string;
  readonly #provision: string;
  readonly #say: (level: 'info' | 'error', line: string) => void;
  /** The bytes last read (null: no file), so a write of the same bytes is no change. */
  #lastBytes: Buffer | null | undefined;
  /** What the file asks for by bound key, from its last good read; undefined until there is one. */
  wants: Map<string, Want> | undefined;
  /** The credentials of the last two good reads: a rotated-away one may still be quoted by an adapter working on it. */
  matcher = new CredentialMatcher([]);

  /** Reads `file` for `provision`; `say` hears a file that is absent or malformed (never its text). */
  constructor(file: string, provision: string, say: (level: 'info' | 'error', line: string) => void) {
    this.#file = file;
    this.#provision = provision;
    this.#say = say;
  }

  /** Reads the file; true when what it asks for changed. A malformed file keeps the last good list. */
  async read(): Promise<boolean> {
    const read = await readConsumersFile(this.#file);
    const bytes = read.state === 'absent' ? null : read.bytes;
    const last = this.#lastBytes;
    if (last !== undefined && (bytes === null || last === null ? bytes === last : bytes.equals(last))) return false;
    this.#lastBytes = bytes;
    if (read.state === 'malformed') {
      const kept = this.wants ? `keeping the last good list (${this.wants.size} consumers)` : 'nothing is served or withdrawn until it is fixed';
      this.#say('error', `consumers file ${this.#file} ${read.reason}: ${kept}`);
      return false;
    }
    if (read.state === 'absent') this.#say('info', `consumers file ${this.#file} is absent: no consumers`);
    const before = this.wants;
    this.wants = wantsOf(read.state === 'read' ? read.entries : [], this.#provision);
    this.matcher = new CredentialMatcher([...this.wants.values(), ...(before?.values() ?? [])].map((w) => w.grant.credential));
    return true;
  }
}
