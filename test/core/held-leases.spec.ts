// Leases held too long: leakDetectionMs reports them once with where they were acquired,
// maxHoldMs aborts their signal and lets their admission slot lapse; stats() shows the oldest.
import { describe, expect, it } from '@jest/globals';
import { LeaseHeldTooLongError, LocalLimiter } from '../../lib/index.js';
import { makePool } from '../support/harness.js';

describe('leakDetectionMs', () => {
  it('reports a lease held too long once, with the stack that acquired it, and its late return', async () => {
    const { pool, clock, logger } = makePool({ leakDetectionMs: 100, reapIntervalMs: 50, clientLimit: 1 });
    const kept = await pool.acquire();
    const quick = await pool.acquire();
    await clock.advance(50);
    quick.release(); // back in time: never reported
    await clock.advance(100);
    await clock.advance(200);
    const leaks = logger.warnings.filter((w) => w.includes('possible leak'));
    expect(leaks).toHaveLength(1);
    expect(leaks[0]).toMatch(
      /^pool "test": a lease of connection 1 has been held for 100 ms \(leakDetectionMs 100\), a possible leak; acquired:\n\s+at /,
    );
    expect(leaks[0]).toContain('held-leases.spec.ts'); // the caller's own frame
    expect(pool.stats()).toMatchObject({ oldestLeaseMs: 350, counters: { leaks: 1 } });
    kept.release();
    expect(logger.warnings.at(-1)).toBe(
      'pool "test": the lease of connection 1 reported as a possible leak came back after 350 ms',
    );
    expect(pool.stats().oldestLeaseMs).toBe(0);
    expect(kept.signal.aborted).toBe(false); // reporting does nothing to the lease
    await pool.close();
  });

  it('reports a caller that waited with the stack of where it asked, not of the release that served it, with or without a signal', async () => {
    const { pool, clock, logger } = makePool({ leakDetectionMs: 100, reapIntervalMs: 50, clientLimit: 1, maxSize: 1 });
    const first = await pool.acquire();
    const askedWithoutSignal = () => pool.acquire();
    const askedWithSignal = () => pool.acquire({ signal: new AbortController().signal });
    const plain = askedWithoutSignal();
    const signalled = askedWithSignal();
    expect(pool.stats().waiting).toBe(2);
    first.release();
    const second = await plain;
    second.release();
    const third = await signalled;
    await clock.advance(150);
    const leaks = logger.warnings.filter((w) => w.includes('possible leak'));
    expect(leaks).toHaveLength(1);
    expect(leaks[0]).toContain('askedWithSignal');
    third.release();
    await pool.close();
  });

  it('keeps nothing while off: no stack, no oldest lease', async () => {
    const { pool } = makePool();
    const lease = await pool.acquire();
    expect(pool.stats().oldestLeaseMs).toBeNull();
    lease.release();
    await pool.close();
  });
});

describe('maxHoldMs', () => {
  it('aborts the signal of a lease held too long, once, with a clear error; the lease still releases', async () => {
    const { pool, clock, logger } = makePool({ maxHoldMs: 100, reapIntervalMs: 50, clientLimit: 1 });
    const lease = await pool.acquire();
    const other = await pool.acquire();
    await clock.advance(50);
    expect(lease.signal.aborted).toBe(false);
    await clock.advance(100);
    expect(lease.signal.aborted).toBe(true);
    expect(lease.signal.reason).toBeInstanceOf(LeaseHeldTooLongError);
    expect((lease.signal.reason as Error).message).toBe(
      'pool "test": a lease held 100 ms passed maxHoldMs (100 ms); stop its work and release it (its admission slot is no longer kept alive)',
    );
    expect(pool.stats()).toMatchObject({ counters: { expiredHolds: 2, leaks: 0 }, clients: 2, oldestLeaseMs: 150 });
    lease.release();
    other.release();
    expect(pool.stats()).toMatchObject({ clients: 0, counters: { released: 2 } });
    expect(logger.warnings.filter((w) => w.includes('leak'))).toEqual([]);
    await pool.close();
  });

  it('ends with the admission too: the limiter’s own signal and the expiry are one signal', async () => {
    const limiter = new LocalLimiter({ global: 1 });
    const { pool, clock } = makePool({ maxHoldMs: 100, reapIntervalMs: 50, limiter });
    const lease = await pool.acquire();
    await clock.advance(150);
    expect(lease.signal.reason).toBeInstanceOf(LeaseHeldTooLongError);
    // In one process the slot is the caller's until it releases: the next caller still waits.
    await expect(pool.acquire({ timeoutMs: 1 })).rejects.toMatchObject({ code: 'CAPACITY_EXCEEDED' });
    lease.release();
    (await pool.acquire()).release();
    await pool.close();
    await limiter.close();
  });

  it('refuses zero, negative and NaN thresholds, saying what to give', () => {
    expect(() => makePool({ maxHoldMs: 0 })).toThrow('pool "test": option "maxHoldMs" must be a number above 0, got 0');
    expect(() => makePool({ leakDetectionMs: Number.NaN })).toThrow(
      'option "leakDetectionMs" must be a number above 0, got NaN',
    );
  });
});
