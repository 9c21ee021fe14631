// The README and docs/benchmarks.md stay a reference, not a lab notebook: short, no clock times of
// runs, no verdicts on internal targets (those live in the bench's own output).
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('the README and the benchmarks page', () => {
  it.each([
    ['README.md', 180],
    ['docs/benchmarks.md', 150],
  ])('%s is under %i lines, with no clock time and no met, missed or undecided', (path, lines) => {
    const text = read(path);
    expect(text.split('\n').length).toBeLessThan(lines);
    expect(text.match(/\b[0-2]?\d:[0-5]\d\b/g) ?? []).toEqual([]);
    expect(text.match(/\b(met|missed|undecided)\b/gi) ?? []).toEqual([]);
  });
});
