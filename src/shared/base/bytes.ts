// The bytes written to and compared on the bus: a write happens only when the bytes differ (STYLE.md habit 8).

/** Whether two byte arrays hold the same bytes. */
export function sameBytes(a: Uint8Array | null | undefined, b: Uint8Array | null | undefined): boolean {
  if (!a || !b) return a === b;
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

/** Encodes a value as the JSON bytes written to the bus. */
export function jsonBytes(value: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(value));
}
