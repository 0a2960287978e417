// How the client's end of the fill socket fails (DESIGN §9): the engine absent, silent, or breaking the
// protocol — each its own error, so the handoff says which and the caller tries again.

/** The engine's socket is absent, refused the connection, or dropped it before replying. */
export class EngineUnavailable extends Error {
  override name = 'EngineUnavailable';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The engine kept the connection but did not answer a request in time; the connection was dropped. */
export class EngineTimeout extends Error {
  override name = 'EngineTimeout';
  /** The engine's socket. */
  readonly socketPath: string;
  /** How long the request waited, in ms. */
  readonly timeoutMs: number;
  constructor(socketPath: string, timeoutMs: number, module: string) {
    super(`engine ${socketPath} did not answer the fill of ${module} within ${timeoutMs} ms`);
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
