// "Did you mean `maxSize`?": the closest of the names a user could have meant, for errors about
// a misspelled option key or pool name.

/** Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`, ignoring case. */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  // Three rows of the optimal string alignment table are enough.
  let before = new Array<number>(t.length + 1).fill(0);
  let previous = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const row = [i];
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let best = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + cost);
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) best = Math.min(best, before[j - 2]! + 1);
      row.push(best);
    }
    before = previous;
    previous = row;
  }
  return previous[t.length]!;
}

/**
 * The candidate `name` most likely misspells: the nearest by edits, if it is near enough (a third
 * of the name's length, at least one edit; any case difference alone), else undefined. A name of
 * four letters or more that begins a candidate (`failOnWarmup` for `failOnWarmupError`) is one edit away.
 */
export function closest(name: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const shortened = name.length >= 4 && candidate.toLowerCase().startsWith(name.toLowerCase());
    const distance = shortened ? 1 : editDistance(name, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return bestDistance <= Math.max(1, Math.floor(name.length / 3)) ? best : undefined;
}
