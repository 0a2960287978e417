// A bare client of the fill socket for the engine's tests: one request at a time, every line the
// engine sends kept with its time, knock lines (DESIGN §14) among them.
import * as assert from 'uvu/assert';
import { createConnection, type Socket } from 'node:net';
import type { FillFile } from '../../src/shared/contract/fill-protocol.ts';
import { sleep, waitFor } from './wait.ts';

/** A line the engine sent, parsed, and when it came (ms since the epoch). */
export type Line = {
  at: number;
  value: { id?: number; op?: string; module?: string; ok?: boolean; files?: { path: string; action: string; reason?: string }[]; error?: string };
};

/** A bare client of the fill socket: one request at a time, every line the engine sends kept with its time. */
export class LineClient {
  readonly lines: Line[] = [];
  #nextId = 1;
  private constructor(private readonly socket: Socket) {
    let buffered = '';
    socket.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk;
      for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
        this.lines.push({ at: Date.now(), value: JSON.parse(buffered.slice(0, nl)) as Line['value'] });
        buffered = buffered.slice(nl + 1);
      }
    });
  }

  /**
   * Connects to the engine's socket. The socket file appears at bind(), a moment before listen():
   * a connection refused in between is made again.
   */
  static async connect(socketPath: string): Promise<LineClient> {
    for (let tries = 0; ; tries++) {
      const socket = createConnection(socketPath);
      try {
        await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
        return new LineClient(socket);
      } catch (err) {
        socket.destroy();
        if ((err as NodeJS.ErrnoException).code !== 'ECONNREFUSED' || tries >= 50) throw err;
        await sleep(20);
      }
    }
  }

  /** Sends a request line and resolves with its reply. */
  async ask(request: Record<string, unknown>): Promise<Line['value']> {
    const id = this.#nextId++;
    this.socket.write(JSON.stringify({ ...request, id }) + '\n');
    return (await waitFor(`the reply to ${id}`, () => this.lines.find((l) => l.value.id === id), 5000)).value;
  }

  /** Fills one module's files and resolves with each file's action (and reason). */
  async fill(module: string, files: FillFile[]): Promise<string[]> {
    const reply = await this.ask({ op: 'fill', module, build: 'b1', files });
    assert.ok(reply.ok, JSON.stringify(reply));
    return reply.files!.map((f) => (f.reason ? `${f.action}: ${f.reason}` : f.action));
  }

  /** The knock lines received so far (for `module` when given). */
  knocks(module?: string): Line[] {
    return this.lines.filter((l) => l.value.op === 'knock' && (module === undefined || l.value.module === module));
  }

  /** Resolves with the time of the next knock for `module` after the `seen` first ones. */
  async nextKnock(module: string, seen: number): Promise<number> {
    return (await waitFor(`knock ${seen + 1} for ${module}`, () => this.knocks(module)[seen], 5000)).at;
  }

  /** Closes the connection. */
  close(): void {
    this.socket.destroy();
  }
}
