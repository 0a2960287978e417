// The fields the contract's documents share (DESIGN §2, §3): names, key tokens, absolute paths,
// builds, and the string schemas each document is made of.
import * as v from 'valibot';
import { encodeToken, NAME_PATTERN, segmentNameProblem } from './keys.ts';
import { MAX_KEY_BYTES, MAX_TOKEN_BYTES } from './limits.ts';

/**
 * A name a placeholder can hold (DESIGN §8): no whitespace, `{`, `}` or `$`, not starting with `-`,
 * `=`, `+` or `?`. The fill protocol's secret parts take the same names.
 */
export const PLACEHOLDER_NAME_PATTERN = /^[^\s{}$\-=+?][^\s{}$]*$/;

/** Longest file or secret path a plan may name, in bytes (Linux's PATH_MAX). */
export const MAX_PATH_BYTES = 4096;

/**
 * Says why a name cannot become a key token (DESIGN §3): its UTF-8, or its `=XX` encoding, past
 * MAX_TOKEN_BYTES; nothing when it fits. The raw length is checked first, so no long text is encoded.
 */
export function tokenProblem(text: string): string | undefined {
  if (text === '') return 'is empty';
  const raw = Buffer.byteLength(text);
  if (raw > MAX_TOKEN_BYTES) return `is ${raw} bytes, past the limit of ${MAX_TOKEN_BYTES} bytes`;
  const encoded = encodeToken(text).length;
  if (encoded > MAX_TOKEN_BYTES) return `is ${encoded} bytes as a key token, past the limit of ${MAX_TOKEN_BYTES} bytes`;
  return undefined;
}

/**
 * Says why a path is not absolute and normal: relative, a `.` or `..` segment, `//`, a trailing
 * `/`, a NUL or a line break, or past MAX_PATH_BYTES; nothing when it is.
 */
export function pathProblem(path: string): string | undefined {
  const bytes = Buffer.byteLength(path);
  if (bytes > MAX_PATH_BYTES) return `is ${bytes} bytes, past the limit of ${MAX_PATH_BYTES} bytes`;
  if (/[\0\n\r]/.test(path)) return 'holds a NUL or a line break';
  if (!path.startsWith('/')) return 'is not absolute';
  if (path.includes('//')) return 'holds //';
  if (path.endsWith('/')) return 'ends with /';
  if (path.split('/').some((segment) => segment === '.' || segment === '..')) return 'holds a . or .. segment';
  return undefined;
}

/** Whether a path is absolute and normal, as a plan's file and secret paths must be. */
export function isNormalAbsolutePath(path: string): boolean {
  return pathProblem(path) === undefined;
}

/**
 * Says why a text cannot be a build: empty, or past MAX_TOKEN_BYTES — a name (DESIGN §3), and the
 * archive `publish` stores is named `<module>-<build>.tar.gz` in an object store whose names travel
 * in subjects; nothing when it can.
 */
export function buildProblem(build: string): string | undefined {
  if (build === '') return 'is empty';
  const bytes = Buffer.byteLength(build);
  if (bytes > MAX_TOKEN_BYTES) return `is ${bytes} bytes, past the limit of ${MAX_TOKEN_BYTES} bytes of a name (the archive is <module>-<build>.tar.gz)`;
  return undefined;
}

/** Says why a text cannot be a KV key: past MAX_KEY_BYTES. */
export function keyProblem(text: string): string | undefined {
  const bytes = Buffer.byteLength(text);
  return bytes > MAX_KEY_BYTES ? `is ${bytes} bytes, past the limit of ${MAX_KEY_BYTES} bytes` : undefined;
}

/** A string schema refused with the reason `problem` gives. */
export function checked(problem: (text: string) => string | undefined) {
  return v.pipe(
    v.string(),
    v.check(
      (text) => problem(text) === undefined,
      (issue) => problem(issue.input) ?? 'is refused',
    ),
  );
}

/** A name (DESIGN §3): a node, a module, a provider. */
export const nameField = v.pipe(v.string(), v.regex(NAME_PATTERN, 'is not a valid name'));
/** A text that is not empty. */
export const textField = v.pipe(v.string(), v.minLength(1, 'is empty'));
/** A name that becomes a key token (a collection). */
export const tokenNameField = checked(tokenProblem);
/** A secret's name (a module's own, or a provision's credential), a provision or a local: a segment of a vault name (DESIGN §2). */
export const segmentNameField = checked(segmentNameProblem);
/** A plan's path: absolute and normal. */
export const absolutePathField = checked(pathProblem);
/** A namespace of a placement: name → string or number. */
export const placementMapField = v.record(v.string(), v.union([v.string(), v.number()]));
