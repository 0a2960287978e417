// Where UTF-8 goes wrong: the offset `lint` gives with "not UTF-8", as strict as the fatal TextDecoder.

/**
 * The byte offset of the first byte that does not start or continue a valid UTF-8 sequence
 * (overlong forms, surrogates and code points past U+10FFFF refused, as WHATWG's decoder does);
 * for a sequence cut short, where it starts. Undefined when the bytes are valid UTF-8.
 */
export function firstInvalidUtf8(bytes: Uint8Array): number | undefined {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    const [length, low, high] =
      b >= 0xc2 && b <= 0xdf
        ? [2, 0x80, 0xbf]
        : b === 0xe0
          ? [3, 0xa0, 0xbf]
          : b === 0xed
            ? [3, 0x80, 0x9f]
            : b >= 0xe1 && b <= 0xef
              ? [3, 0x80, 0xbf]
              : b === 0xf0
                ? [4, 0x90, 0xbf]
                : b === 0xf4
                  ? [4, 0x80, 0x8f]
                  : b >= 0xf1 && b <= 0xf3
                    ? [4, 0x80, 0xbf]
                    : [0, 0, 0];
    if (length === 0) return i;
    // The second byte's range rules out overlong forms, surrogates and past U+10FFFF; the rest are plain continuations.
    for (let k = 1; k < length; k++) {
      const c = bytes[i + k];
      if (c === undefined) return i;
      if (k === 1 ? c < low || c > high : c < 0x80 || c > 0xbf) return i;
    }
    i += length;
  }
  return undefined;
}
