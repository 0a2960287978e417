// The one result type of the project: a value, or the reason there is none (errors as data).

/** The result of parsing or checking: the value, or the reason it is refused. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

/** A refusal with its reason. */
export function fail(reason: string): { ok: false; reason: string } {
  return { ok: false, reason };
}

/** A value that passed. */
export function ok<T>(value: T): { ok: true; value: T } {
  return { ok: true, value };
}
