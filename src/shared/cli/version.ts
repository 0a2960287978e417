// The version stamped in by the bundler (package.json), or "dev" when run from source.
declare const __VERSION__: string | undefined;

/** The program's version. */
export const VERSION: string = typeof __VERSION__ === 'string' ? __VERSION__ : 'dev';
