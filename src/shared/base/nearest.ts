// "Did you mean": the known name nearest to a word that is not one (a field of a composition, a
// placeholder's kind), by the optimal-string-alignment distance — Levenshtein's insertions, deletions
// and substitutions plus a swap of two neighbours, each one step, so `mdoe` is one step from `mode`.

/** The most steps a suggestion may be from the word: a third of its length, at least 1, at most 3. */
export function suggestionBound(word: string): number {
  return Math.min(3, Math.max(1, Math.floor(word.length / 3)));
}

/**
 * The candidate nearest to `word` within `bound` steps (case counts as a step), the first in
 * `candidates`' order on a tie; undefined when none is that near or `word` is itself a candidate.
 */
export function nearestName(word: string, candidates: Iterable<string>, bound = suggestionBound(word)): string | undefined {
  let best: string | undefined;
  let bestDistance = bound + 1;
  for (const candidate of candidates) {
    if (candidate === word) return undefined;
    const distance = boundedDistance(word, candidate, bestDistance - 1);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** `did you mean "x"?`, or nothing when no candidate is near: the tail of a refusal. */
export function didYouMean(word: string, candidates: Iterable<string>): string | undefined {
  const near = nearestName(word, candidates);
  return near === undefined ? undefined : `did you mean ${JSON.stringify(near)}?`;
}

/**
 * The optimal-string-alignment distance of `a` and `b` when it is at most `bound`, else bound + 1.
 * Words whose lengths differ by more than the bound are never compared, so a hostile key of a
 * megabyte costs nothing; otherwise it is the usual three-row table, O(|a|·|b|).
 */
export function boundedDistance(a: string, b: string, bound: number): number {
  if (Math.abs(a.length - b.length) > bound) return bound + 1;
  let before = new Array<number>(b.length + 1).fill(0);
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  let current = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    let rowBest = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      current[j] = d;
      rowBest = Math.min(rowBest, d);
    }
    // Every later row is at least this row's least: past the bound, nothing can come back under it.
    if (rowBest > bound) return bound + 1;
    [before, previous, current] = [previous, current, before];
  }
  return Math.min(previous[b.length]!, bound + 1);
}
