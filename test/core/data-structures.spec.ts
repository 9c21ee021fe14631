// The engine's data structures on their own, against plain models (as HikariCP tests its
// ConcurrentBag): the connection index with its bitmap buckets, the waiter queue, the backoff.
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { backoffMs } from '../../lib/core/backoff.js';
import { ConnectionIndex } from '../../lib/core/connection-index.js';
import { SharedConnection } from '../../lib/core/shared-connection.js';
import { Waiter, WaiterQueue } from '../../lib/core/waiter-queue.js';

type Op = { kind: 'add'; clients: number; limit: number } | { kind: 'remove'; at: number } | { kind: 'update'; at: number; clients: number };

const ops = (clientLimit: number) =>
  fc.array(
    fc.oneof(
      fc.record({ kind: fc.constant('add' as const), clients: fc.nat(clientLimit), limit: fc.integer({ min: 1, max: clientLimit }) }),
      fc.record({ kind: fc.constant('remove' as const), at: fc.nat() }),
      fc.record({ kind: fc.constant('update' as const), at: fc.nat(), clients: fc.nat(clientLimit) }),
    ),
    { maxLength: 200 },
  );

describe('ConnectionIndex', () => {
  // Client limits around the 32-bit word edges of the bitmap.
  it.each([1, 2, 31, 32, 33, 64, 65, 100])('picks like the model at clientLimit %i, for spread and pack', (clientLimit) => {
    fc.assert(
      fc.property(ops(clientLimit), fc.constantFrom('spread' as const, 'pack' as const), (script: Op[], strategy) => {
        const index = new ConnectionIndex<number>(clientLimit, strategy);
        // The model: every connection with room, most recently filed last.
        let model: SharedConnection<number>[] = [];
        const all: SharedConnection<number>[] = [];
        let id = 0;
        const file = (c: SharedConnection<number>) => {
          model = model.filter((m) => m !== c);
          if (c.clients < c.limit) model.push(c);
        };
        for (const op of script) {
          if (op.kind === 'add') {
            const c = new SharedConnection<number>(id++, op.limit);
            c.clients = Math.min(op.clients, op.limit);
            all.push(c);
            index.add(c);
            file(c);
          } else if (all.length > 0) {
            const c = all[op.at % all.length]!;
            if (op.kind === 'remove') {
              index.remove(c);
              model = model.filter((m) => m !== c);
            } else {
              c.clients = Math.min(op.clients, c.limit);
              index.update(c);
              file(c);
            }
          }
          expect(index.size).toBe(model.length);
          const best = model.reduce<SharedConnection<number> | null>((b, c) => {
            if (b === null) return c;
            const better = strategy === 'spread' ? c.clients <= b.clients : c.clients >= b.clients; // later = more recent wins ties
            return better ? c : b;
          }, null);
          expect(index.pick()).toBe(best);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('leaves a full connection out, and removing one not in the index does nothing', () => {
    const index = new ConnectionIndex<number>(4, 'spread');
    const full = new SharedConnection<number>(1, 2);
    full.clients = 2;
    index.add(full);
    expect(index.size).toBe(0);
    expect(index.pick()).toBeNull();
    index.remove(full);
    expect(index.size).toBe(0);
  });
});

describe('WaiterQueue', () => {
  it('keeps FIFO order through pushes and removals anywhere, like an array', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constant('push' as const), fc.nat({ max: 1000 })), { maxLength: 300 }), (script) => {
        const queue = new WaiterQueue<number>();
        const model: Waiter<number>[] = [];
        const made: Waiter<number>[] = [];
        for (const op of script) {
          if (op === 'push') {
            const w = new Waiter<number>(0);
            made.push(w);
            queue.push(w);
            model.push(w);
          } else if (made.length > 0) {
            const w = made[op % made.length]!;
            queue.remove(w); // a second removal is a no-op
            const at = model.indexOf(w);
            if (at >= 0) model.splice(at, 1);
            expect(w.queued).toBe(false);
          }
          expect(queue.length).toBe(model.length);
          expect(queue.head).toBe(model[0] ?? null);
        }
        const order: Waiter<number>[] = [];
        for (let w = queue.head; w !== null; w = w.next) order.push(w);
        expect(order).toEqual(model);
      }),
      { numRuns: 300 },
    );
  });
});

describe('backoffMs', () => {
  it('starts at the first delay, doubles per failure, and stops at the most', () => {
    expect([1, 2, 3, 4, 5].map((n) => backoffMs(n, 10, 100))).toEqual([10, 20, 40, 80, 100]);
    expect(backoffMs(0, 10, 100)).toBe(10);
    expect(backoffMs(10_000, 10, 5_000)).toBe(5_000); // 2 ** 9999 is Infinity: still the most
    // The Redis limiter's reconnects: 100, 200, 400, 800, 1000 ms.
    expect([1, 2, 3, 4, 5].map((n) => backoffMs(n, 100, 1_000))).toEqual([100, 200, 400, 800, 1_000]);
  });
});
