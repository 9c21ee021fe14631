// Seeded connector-level chaos on the real servers (see connector-chaos.ts): callers leave state
// at random in random spellings, and the next caller always finds a fresh connection, every write
// there. `npm run chaos -- --connectors --seeds 50` runs more.
import { describe, expect, it } from '@jest/globals';
import { type ConnectorKind, runConnectorChaos } from './connector-chaos.js';

describe('connector chaos', () => {
  it.each<ConnectorKind>(['pg', 'mysql2', 'ioredis'])(
    '%s: 4 seeded schedules of callers leaving state keep every next caller clean and every write',
    async (kind) => {
      for (const seed of [1, 2, 3, 4]) {
        const result = await runConnectorChaos(kind, seed);
        expect(result.violations).toEqual([]);
        expect(Object.values(result.left).reduce((a, b) => a + b, 0)).toBeGreaterThan(20); // the schedule left state
      }
    },
    60_000,
  );
});
