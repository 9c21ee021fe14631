import { describe, expect, it } from '@jest/globals';
import { makePool, track } from '../support/harness.js';

describe('smoke', () => {
  it('acquires and releases', async () => {
    const { pool, connector, clock } = makePool({ clientLimit: 2, maxSize: 1 });
    const a = track(pool.acquire());
    await clock.advance(0);
    expect(a.value?.connection.id).toBe(1);
    const b = await pool.acquire();
    expect(b.connection).toBe(a.value!.connection);
    const c = track(pool.acquire({ timeoutMs: 100 }));
    await clock.advance(99);
    expect(c.settled).toBe(false);
    await clock.advance(1);
    expect((c.error as Error).name).toBe('ConnectionsExhaustedError');
    a.value!.release();
    b.release();
    await pool.close();
    expect(connector.live.size).toBe(0);
  });
});
