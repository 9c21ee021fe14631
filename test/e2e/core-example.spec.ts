import { describe, expect, it, jest } from '@jest/globals';
import { main } from '../../sample-app/core-example.js';

describe('the README core example (sample-app/core-example.ts)', () => {
  it('serves every request over a few shared HTTP/2 sessions and closes them all', async () => {
    const log = jest.spyOn(console, 'log').mockImplementation(() => {});
    const { bodies, stats } = await main(300);
    log.mockRestore();
    expect(bodies).toHaveLength(300);
    expect(bodies[7]).toBe('hello /item/7');
    expect(stats.counters.opened).toBeGreaterThanOrEqual(1);
    expect(stats.counters.opened).toBeLessThanOrEqual(4);
    expect(stats.clients).toBe(0);
    expect(stats.counters.createFailures).toBe(0);
  });
});
