import { bestOf, describe as describeRatio, medianOf, pairedRatio, verdict } from '../../bench/paired.js';

type Round = { a: number; b: number };
/** One set per pair of rates, one round each. */
const sets = (pairs: [number, number][]): Round[][] => pairs.map(([a, b]) => [{ a, b }]);
const aOverB = (r: Round) => r.a / r.b;

describe('pairedRatio (the bench: a ratio with the noise taken into account)', () => {
  it('takes the median of the pairs, not the ratio of the bests', () => {
    // b's one lucky round (200) would make best(a) / best(b) 0.56; pair by pair a is ahead.
    const r = pairedRatio(
      sets([
        [110, 100],
        [105, 100],
        [108, 200],
        [112, 100],
        [104, 100],
      ]),
      aOverB,
    );
    expect(r.median).toBeCloseTo(1.05, 10);
    expect(r.sets).toBe(5);
  });

  it("counts a set of processes once: the median of its rounds' ratios", () => {
    // The second set's processes favour a in every round: one sample (1.5), not three.
    const r = pairedRatio(
      [
        [{ a: 1, b: 1 }],
        [
          { a: 3, b: 2 },
          { a: 3, b: 2 },
          { a: 30, b: 2 },
        ],
        [{ a: 1, b: 1 }],
      ],
      aOverB,
    );
    expect(r).toMatchObject({ median: 1, low: 1, high: 1.5, sets: 3 });
  });

  it('gives the sign-test range: the least and greatest of five sets at 94 %, the 2nd and 9th of ten at 98 %', () => {
    const five = pairedRatio(
      sets([
        [1, 1],
        [2, 1],
        [3, 1],
        [4, 1],
        [5, 1],
      ]),
      aOverB,
    );
    expect([five.low, five.high]).toEqual([1, 5]);
    expect(five.confidence).toBeCloseTo(1 - 2 / 32, 10);
    const ten = pairedRatio(sets(Array.from({ length: 10 }, (_, i): [number, number] => [i + 1, 1])), aOverB);
    expect([ten.low, ten.high, ten.median]).toEqual([2, 9, 5.5]);
    expect(ten.confidence).toBeCloseTo(1 - (2 * 11) / 1024, 10);
    const sixteen = pairedRatio(sets(Array.from({ length: 16 }, (_, i): [number, number] => [i + 1, 1])), aOverB);
    expect([sixteen.low, sixteen.high]).toEqual([5, 12]);
  });

  it('with four sets or fewer says how little the range is worth', () => {
    const four = pairedRatio(
      sets([
        [1, 1],
        [2, 1],
        [3, 1],
        [4, 1],
      ]),
      aOverB,
    );
    expect([four.low, four.high]).toEqual([1, 4]);
    expect(four.confidence).toBeCloseTo(0.875, 10);
    expect(pairedRatio(sets([[3, 2]]), aOverB)).toMatchObject({ median: 1.5, low: 1.5, high: 1.5, confidence: 0 });
  });

  it('refuses no rounds with a clear error', () => {
    expect(() => pairedRatio([], aOverB)).toThrow(/no rounds/);
    expect(() => pairedRatio([[]], aOverB)).toThrow(/no rounds/);
  });

  it('calls a target met, missed, or undecided from the range, on either side', () => {
    const r = { median: 0.95, low: 0.9, high: 1.0, confidence: 0.97, sets: 6 };
    expect(verdict(r, 0.9, 'at least')).toBe('met');
    expect(verdict(r, 0.95, 'at least')).toBe('undecided');
    expect(verdict(r, 1.01, 'at least')).toBe('missed');
    expect(verdict(r, 1.0, 'at most')).toBe('met');
    expect(verdict(r, 0.97, 'at most')).toBe('undecided');
    expect(verdict(r, 0.89, 'at most')).toBe('missed');
    expect(describeRatio(r, 1.05, 'at most')).toBe('0.95× (0.90–1.00, 6 sets of processes at 97 %): met');
    expect(describeRatio(r)).toBe('0.95× (0.90–1.00, 6 sets of processes at 97 %)');
  });
});

describe('bestOf', () => {
  it("keeps the best rate of each variant over every set's rounds", () => {
    expect(
      bestOf([
        [
          { x: 10, y: 5 },
          { x: 12, y: 4 },
        ],
        [{ x: 11, y: 6 }],
      ]),
    ).toEqual({ x: 12, y: 6 });
  });
});

describe('medianOf', () => {
  it('takes the middle value, or the mean of the two middle ones, in any order, leaving its input as it was', () => {
    const odd = [3, 1, 2];
    expect(medianOf(odd)).toBe(2);
    expect(odd).toEqual([3, 1, 2]);
    expect(medianOf([0.4, 0.1, 0.3, 0.2])).toBeCloseTo(0.25);
    expect(medianOf([7])).toBe(7);
  });
});
