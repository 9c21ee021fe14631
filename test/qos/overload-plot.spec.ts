// The picture of controlled waiting in docs/limits.md (overload-plot.ts) is the one these runs
// draw, and what it shows holds: at twice the capacity with a 1 s deadline, a FIFO queue serves
// every caller after most of its deadline; refusing at once and controlled waiting keep the
// served callers within 3 L; controlled waiting serves the capacity.
import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { figures, overloadPlot, overloadRuns } from './overload-plot.js';

describe('the overload picture in docs/limits.md', () => {
  const runs = overloadRuns();
  const { series, serviceMs: L, capacity } = runs;
  const full = (capacity / L) * 1_000;
  const of = (text: string) => figures(series.find((s) => s.text.includes(text))!.run);

  it('shows what pools do, what fail-fast does and what controlled waiting does, as stated', () => {
    const fifo = of('FIFO');
    expect(fifo.p50).toBeGreaterThan(900);
    expect(fifo.goodput).toBeGreaterThanOrEqual(0.95 * full);
    const failFast = of(`fixed ${capacity}, refused at once`);
    expect(failFast.p99).toBeLessThanOrEqual(3 * L);
    const controlled = of(`fixed ${capacity}, controlled`);
    expect(controlled.p99).toBeLessThanOrEqual(3 * L);
    expect(controlled.goodput).toBeGreaterThanOrEqual(0.95 * full);
    const netflix = of('Netflix');
    expect(netflix.p99).toBeLessThanOrEqual(3 * L);
    expect(netflix.goodput).toBeLessThan(controlled.goodput);
    const adaptive = of('adaptive');
    expect(adaptive.p50).toBeLessThanOrEqual(3 * L);
    expect(adaptive.goodput).toBeGreaterThanOrEqual(0.95 * full);
  });

  it('is the committed SVG', () => {
    const committed = readFileSync(fileURLToPath(new URL('../../docs/overload-waiting.svg', import.meta.url)), 'utf8');
    expect(committed).toBe(overloadPlot(runs).svg);
  });
});
