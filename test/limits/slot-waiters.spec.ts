// The limiters' waiting callers on their own: first come first served, each leaving at its
// deadline or abort from anywhere in the queue, all refused at close.
import { describe, expect, it } from '@jest/globals';
import { systemClock } from '../../lib/index.js';
import { SlotWaiters } from '../../lib/limits/local/slot-waiters.js';

const request = (timeoutMs: number, signal?: AbortSignal) => ({ pool: 'api', timeoutMs, signal });

describe('SlotWaiters', () => {
  it('keeps arrival order while waiters leave from the middle, by abort or deadline', async () => {
    const waiters = new SlotWaiters<string>(systemClock);
    const abort = new AbortController();
    const a = waiters.wait(request(10_000), () => new Error('a timed out'));
    const b = waiters.wait(request(10_000, abort.signal), () => new Error('b timed out'));
    const c = waiters.wait(request(20), () => new Error('c timed out'));
    const d = waiters.wait(request(10_000), () => new Error('d timed out'));
    expect(waiters.length).toBe(4);
    const [wa, wb, , wd] = waiters.snapshot();
    abort.abort(new Error('b aborted'));
    await expect(b).rejects.toThrow('b aborted');
    await expect(c).rejects.toThrow('c timed out');
    expect(waiters.snapshot()).toEqual([wa, wd]);
    expect(waiters.has(wb!)).toBe(false);

    wd!.resolve('for d');
    await expect(d).resolves.toBe('for d');
    expect(waiters.has(wd!)).toBe(false);
    expect(waiters.snapshot()).toEqual([wa]);
    waiters.rejectAll(new Error('closed'));
    await expect(a).rejects.toThrow('closed');
    expect(waiters.length).toBe(0);
  });

  it('refuses at once a request whose signal already aborted', async () => {
    const waiters = new SlotWaiters<string>(systemClock);
    await expect(
      waiters.wait(request(1_000, AbortSignal.abort(new Error('gone'))), () => new Error('late')),
    ).rejects.toThrow('gone');
    expect(waiters.length).toBe(0);
  });
});
