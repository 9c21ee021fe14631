// Seeded chaos against the engine (see chaos.ts); `npm run chaos -- --seeds 5000` runs more, and
// `npm run chaos -- --seed N` re-runs a failing seed.
import { describe, expect, it } from '@jest/globals';
import { runChaos, type ChaosResult } from './chaos.js';
import { runGroupChaos, type GroupChaosResult } from './group-chaos.js';

async function failures(seeds: number[], real = false): Promise<ChaosResult[]> {
  const failed: ChaosResult[] = [];
  for (const seed of seeds) {
    const result = await runChaos(seed, { real });
    if (result.violations.length > 0) failed.push(result);
  }
  return failed;
}

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

// Seeds run in chunks of 50, a test each: the work is CPU-bound and fixed, but beside the suite's
// multi-process specs (several busy processes on two cores) it ran ten times slower than alone
// (11 s alone, past 120 s once in a full run); a chunk stays far inside its timeout either way.
const CHUNK = 50;

describe('chaos', () => {
  for (let from = 1; from <= 300; from += CHUNK) {
    it(`seeded schedules ${from}-${from + CHUNK - 1} of faults on virtual time keep every invariant`, async () => {
      expect(await failures(range(from, CHUNK))).toEqual([]);
    }, 120_000);
  }

  it('3 seeded schedules on real timers keep every invariant', async () => {
    expect(await failures([11, 12, 13], true)).toEqual([]);
  }, 120_000);

  for (let from = 1; from <= 200; from += CHUNK) {
    it(`seeded schedules ${from}-${from + CHUNK - 1} against pool groups keep maxTotal at the connector and every other invariant`, async () => {
      const failed: GroupChaosResult[] = [];
      for (const seed of range(from, CHUNK)) {
        const result = await runGroupChaos(seed);
        if (result.violations.length > 0) failed.push(result);
      }
      expect(failed).toEqual([]);
    }, 120_000);
  }

  it('a seed is deterministic on virtual time', async () => {
    const [a, b] = [await runChaos(42), await runChaos(42)];
    expect(a).toEqual(b);
    expect(a.operations).toBeGreaterThan(100);
    expect(a.connections).toBeGreaterThan(0);
  });
});
