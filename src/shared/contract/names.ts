// The grammars of names (DESIGN §2): a node, module or contributor; a secret, provision or local; a
// placeholder kind — and the reasons a text is not one, naming the field.

/** A name: a node, module or contributor (DESIGN §2). */
export const NAME_PATTERN = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * A secret's name, a provision or a local (DESIGN §2): each becomes a segment of a vault name, so it
 * holds no `/`, `.` or `..`, and a bound key's token stands for itself.
 */
export const SEGMENT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** A placeholder kind (DESIGN §8). */
export const KIND_PATTERN = /^[a-z][a-z0-9-]*$/;

/** Whether `name` is a valid node, module or contributor name. */
export function isName(name: string): boolean {
  return NAME_PATTERN.test(name);
}

/** Whether `name` is a valid secret name, provision or local. */
export function isSegmentName(name: string): boolean {
  return SEGMENT_NAME_PATTERN.test(name);
}

/** Says why a text is not a secret name, provision or local (quoting at most 64 characters of it); nothing when it is. */
export function segmentNameProblem(text: string): string | undefined {
  if (isSegmentName(text)) return undefined;
  const quoted = JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text);
  return `is ${quoted}, not a name of 1 to 128 of A-Z a-z 0-9 _ - starting with a letter or digit (no /, . or ..)`;
}

/** Says why `value` of `field` is not a node, module or contributor name; nothing when it is. */
export function checkName(field: string, value: string): string | undefined {
  return isName(value) ? undefined : `${field} "${value}" is not a valid name (a-z, 0-9 and -, at most 63)`;
}

/** Says why `value` of `field` is not a secret name, provision or local; nothing when it is. */
export function checkSegment(field: string, value: string): string | undefined {
  const problem = segmentNameProblem(value);
  return problem === undefined ? undefined : `${field} ${problem}`;
}
