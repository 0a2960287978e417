// How the client's end of the fill socket fails (DESIGN §9): the engine absent, silent, or breaking the
// protocol — each its own error, so the handoff says which and the caller tries again.

/** The engine's socket is absent, refused the connection, or dropped it before replying. */
export class EngineUnavailable extends Error {
  override name = 'EngineUnavailable';
  /**
   * Whether this proves the engine down (DESIGN §14): its socket could not be reached or it closed the
   * connection. A connection the client gave up itself (a knock, its own close) proves nothing.
   */
  readonly engineGone: boolean;
  constructor(message: string, options?: { cause?: unknown; engineGone?: boolean }) {
    super(message, options);
    this.engineGone = options?.engineGone === true;
  }
}

/** The engine kept the connection but did not answer a request in time; the connection was dropped. */
export class EngineTimeout extends Error {
  override name = 'EngineTimeout';
  /** The engine's socket. */
  readonly socketPath: string;
  /** How long the request waited, in ms. */
  readonly timeoutMs: number;
  /** `what` the engine did not answer: a module's fill, or `a ping` (`ping: true`). */
  constructor(socketPath: string, timeoutMs: number, module: string, ping = false) {
    super(`engine ${socketPath} did not answer ${ping ? 'a ping' : `the fill of ${module}`} within ${timeoutMs} ms`);
    this.socketPath = socketPath;
    this.timeoutMs = timeoutMs;
  }
}

/** The engine broke the protocol: a reply out of shape or naming a file it was not sent, or a line past the limit. */
export class EngineProtocolError extends Error {
  override name = 'EngineProtocolError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/**
 * What a fill's or a ping's failure says of the engine (DESIGN §14): down when it timed out or its
 * socket is gone, up when it answered out of shape (it is there), nothing when the client dropped the
 * connection itself.
 */
export function engineProof(err: unknown): 'up' | 'down' | undefined {
  if (err instanceof EngineTimeout) return 'down';
  if (err instanceof EngineUnavailable) return err.engineGone ? 'down' : undefined;
  if (err instanceof EngineProtocolError) return 'up';
  return undefined;
}
