// The address `--metrics HOST:PORT` names: where the seat listens for Prometheus's scrapes.
import { fail, ok, type Parsed } from '../../shared/base/result.ts';

/** Where the metrics endpoint listens. */
export type ListenAddress = {
  /** A name or an address (an IPv6 one without its brackets). */
  host: string;
  /** 1–65535. */
  port: number;
};

/** Parses `HOST:PORT` (`[::1]:9464` for an IPv6 address); the reason says what is wrong, for the caller to name its flag. */
export function parseListenAddress(text: string): Parsed<ListenAddress> {
  const shape = /^(?:\[([0-9A-Fa-f:.]+)\]|([^\s:[\]/]+)):(\d+)$/.exec(text);
  if (!shape) return fail(`"${text}" is not HOST:PORT (an IPv6 address in brackets: [::1]:9464)`);
  const port = Number(shape[3]);
  if (!(port >= 1 && port <= 65535)) return fail(`port ${shape[3]} of "${text}" is not 1–65535`);
  return ok({ host: shape[1] ?? shape[2]!, port });
}

/** The address as `HOST:PORT`, as given (brackets around an IPv6 address). */
export function addressText(address: ListenAddress): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}
