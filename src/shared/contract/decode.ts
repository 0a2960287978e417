// Decoding JSON against a valibot schema, within limits, into a result whose reason names the field:
// apart from the contract's schemas so that what decodes a schema of its own, as the SDK's
// asks do, does not bundle every schema of the mesh.
import * as v from 'valibot';
import type { Parsed } from '../base/result.ts';
import { MAX_PLAN_BYTES, parseBoundedJson, type JsonLimits } from './limits.ts';

/**
 * Decodes JSON bytes or text against a schema, within limits (by default a plan's: 1 MiB, 64
 * levels); the reason names the limit, or the field and what is wrong.
 */
export function decodeJson<S extends v.GenericSchema>(
  schema: S,
  data: Uint8Array | string,
  limits: JsonLimits = { maxBytes: MAX_PLAN_BYTES },
): Parsed<v.InferOutput<S>> {
  const raw = parseBoundedJson(data, limits);
  if (!raw.ok) return raw;
  return validate(schema, raw.value);
}

/** Validates a value against a schema; the reason names the field and what is wrong. */
export function validate<S extends v.GenericSchema>(schema: S, raw: unknown): Parsed<v.InferOutput<S>> {
  const result = validateEach(schema, raw);
  return result.ok ? result : { ok: false, reason: result.reasons.join('; ') };
}

/** Validates a value against a schema; each reason names a field and what is wrong with it, one per problem. */
export function validateEach<S extends v.GenericSchema>(schema: S, raw: unknown): { ok: true; value: v.InferOutput<S> } | { ok: false; reasons: string[] } {
  const result = v.safeParse(schema, raw);
  if (result.success) return { ok: true, value: result.output };
  return { ok: false, reasons: result.issues.map(describeIssue) };
}

/** One valibot issue as a line: the field, then what is wrong. */
function describeIssue(issue: v.BaseIssue<unknown>): string {
  const path = v.getDotPath(issue);
  const field = path ? `field "${path}"` : 'value';
  const message = issue.message.startsWith('Invalid') ? `${issue.message.toLowerCase()}` : issue.message;
  return `${field} ${message}`;
}
