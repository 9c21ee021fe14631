// The limiters' waiting callers on their own: first come first served, each leaving at its
// deadline or abort from anywhere in the queue, served in order at a cost of those read, all
// refused at close.
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
    const c = waiters.wait(request(20), (r) => new Error(`c timed out after ${r.timeoutMs} ms`));
    const d = waiters.wait(request(10_000), () => new Error('d timed out'));
    expect(waiters.length).toBe(4);
    const [wa, wb, , wd] = waiters.snapshot();
    abort.abort(new Error('b aborted'));
    await expect(b).rejects.toThrow('b aborted');
    await expect(c).rejects.toThrow('c timed out after 20 ms');
    expect(waiters.snapshot()).toEqual([wa, wd]);
    expect(waiters.has(wb!)).toBe(false);

    expect(waiters.grant(wd!, 'for d')).toBe(true);
    await expect(d).resolves.toBe('for d');
    expect(waiters.has(wd!)).toBe(false);
    expect(waiters.grant(wd!, 'again')).toBe(false); // served: a second value stays the caller's
    expect(waiters.grant(wb!, 'late')).toBe(false); // aborted: likewise
    expect(waiters.snapshot()).toEqual([wa]);
    waiters.rejectAll(new Error('closed'));
    await expect(a).rejects.toThrow('closed');
    expect(waiters.length).toBe(0);
  });

  it('hands slots over in order, passing over the waiters it is told to, and reads none past the last slot', async () => {
    const waiters = new SlotWaiters<string>(systemClock);
    const calls = Array.from({ length: 10_000 }, (_, i) =>
      waiters.wait(request(10_000), () => new Error(`${i} timed out`)),
    );
    const [first, second, third] = waiters.snapshot();
    const read: unknown[] = [];
    // The first waiter's key is full: passed over; the next two get a slot each; then none is left.
    waiters.serve((w) => {
      read.push(w);
      return read.length === 1 ? undefined : read.length <= 3 ? `slot ${read.length}` : false;
    });
    expect(read).toHaveLength(4); // three waiters and the one told there is nothing left, of 10,000
    await expect(calls[1]).resolves.toBe('slot 2');
    await expect(calls[2]).resolves.toBe('slot 3');
    expect([waiters.has(first!), waiters.has(second!), waiters.has(third!)]).toEqual([true, false, false]);
    expect(waiters.length).toBe(9_998);
    expect(waiters.snapshot()[0]).toBe(first); // still first in line
    waiters.rejectAll(new Error('closed'));
    await Promise.allSettled(calls);
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
