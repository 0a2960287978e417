// The HTTP listener of `--metrics HOST:PORT`: GET /metrics answers the registry in Prometheus's text
// format; anything else is a 404 or a 405. One listener, closed with the seat.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { errorText } from '../../shared/base/errors.ts';
import { fail, ok, type Parsed } from '../../shared/base/result.ts';
import type { Logger } from '../../shared/cli/log.ts';
import { addressText, type ListenAddress } from './listen-address.ts';

/** The path Prometheus scrapes by default. */
export const METRICS_PATH = '/metrics';

/** A listening endpoint. */
export type MetricsEndpoint = {
  /** The port it listens on (the one asked, or the one given for port 0 in tests). */
  port: number;
  /** Stops listening and ends every open connection; resolves once closed. */
  close(): Promise<void>;
};

/** Listens at `address`; the reason says why it cannot (`address already in use`, `permission denied`…). */
export async function serveMetrics(address: ListenAddress, registry: Registry, log: Logger): Promise<Parsed<MetricsEndpoint>> {
  const server = createServer((req, res) => void answer(req, res, registry, log));
  // Past a 60 s scrape interval, so a scraper's connection is kept from one scrape to the next; the
  // close ends it (closeAllConnections) rather than waiting for the scraper to hang up.
  server.keepAliveTimeout = 65_000;
  const listening = await new Promise<Parsed<number>>((resolve) => {
    server.once('error', (err: NodeJS.ErrnoException) => resolve(fail(listenFailure(err))));
    server.listen({ host: address.host, port: address.port }, () => {
      const bound = server.address();
      resolve(ok(typeof bound === 'object' && bound ? bound.port : address.port));
    });
  });
  if (!listening.ok) return listening;
  server.on('error', (err) => log.warn(`metrics: ${errorText(err)}`));
  log.info(`metrics: serving ${METRICS_PATH} on ${addressText({ ...address, port: listening.value })}`);
  return ok({
    port: listening.value,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections?.();
      }),
  });
}

async function answer(req: IncomingMessage, res: ServerResponse, registry: Registry, log: Logger): Promise<void> {
  const path = (req.url ?? '').split('?')[0];
  if (path !== METRICS_PATH) return send(res, 404, `not found: the figures are at ${METRICS_PATH}\n`);
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, `${req.method ?? ''} not allowed: GET ${METRICS_PATH}\n`, { allow: 'GET, HEAD' });
  try {
    const text = await registry.metrics();
    send(res, 200, req.method === 'HEAD' ? '' : text, { 'content-type': registry.contentType });
  } catch (err) {
    log.warn(`metrics: a scrape failed: ${errorText(err)}`);
    send(res, 500, `the figures could not be read: ${errorText(err)}\n`);
  }
}

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
  res.end(body);
}

/** The listen error in words: the code's meaning first (EADDRINUSE: the port is taken). */
function listenFailure(err: NodeJS.ErrnoException): string {
  if (err.code === 'EADDRINUSE') return `the address is already in use (another program listens there)`;
  if (err.code === 'EACCES') return `permission denied (a port below 1024 needs CAP_NET_BIND_SERVICE)`;
  if (err.code === 'EADDRNOTAVAIL') return `no interface of this machine has that address`;
  if (err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN') return `the host name does not resolve`;
  return errorText(err);
}
