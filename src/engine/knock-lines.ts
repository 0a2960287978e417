// Which connections a knock for one module goes to (DESIGN §14): those that have sent a fill for
// that module and are still open — the client that keeps the module on disk. A daemon client and a
// `--once` run that both filled it both hear it; a connection that never sent that module (a ping
// alone, another tool) does not.
import type { Socket } from 'node:net';
import { knockLine } from '../shared/contract/fill-ping-knock.ts';

/** The connections that filled each module, and the knock line sent to them. */
export class KnockLines {
  readonly #byModule = new Map<string, Set<Socket>>();
  /** The modules each open connection filled: one close listener a connection, not one a module. */
  readonly #bySocket = new Map<Socket, Set<string>>();

  /** Notes that `socket` sent a fill for `module`; it is forgotten when it closes. */
  filled(module: string, socket: Socket): void {
    let modules = this.#bySocket.get(socket);
    if (!modules) {
      if (socket.destroyed) return;
      this.#bySocket.set(socket, (modules = new Set()));
      socket.once('close', () => this.#closed(socket));
    }
    if (modules.has(module)) return;
    modules.add(module);
    let sockets = this.#byModule.get(module);
    if (!sockets) this.#byModule.set(module, (sockets = new Set()));
    sockets.add(socket);
  }

  /** Writes the knock line for `module` on every open connection that filled it; returns how many it went to. */
  knock(module: string): number {
    let sent = 0;
    for (const socket of this.#byModule.get(module) ?? []) {
      if (!socket.writable) continue;
      socket.write(knockLine(module));
      sent++;
    }
    return sent;
  }

  #closed(socket: Socket): void {
    for (const module of this.#bySocket.get(socket) ?? []) {
      const sockets = this.#byModule.get(module);
      sockets?.delete(socket);
      if (sockets?.size === 0) this.#byModule.delete(module);
    }
    this.#bySocket.delete(socket);
  }
}
