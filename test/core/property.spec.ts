// Random schedules of everything a pool lives through, with the invariants checked after every step.
import { describe, it } from '@jest/globals';
import fc from 'fast-check';
import type { Lease } from '../../lib/index.js';
import { FakeConnector, type FakeConnection, type Step } from '../support/fake-connector.js';
import { makePool } from '../support/harness.js';
import { flush } from '../support/virtual-clock.js';

type Op =
  | { op: 'acquire'; timeoutMs: number | undefined; abortable: boolean }
  | { op: 'release' | 'fail' | 'doubleRelease'; pick: number }
  | { op: 'abort'; pick: number }
  | { op: 'advance'; ms: number }
  | { op: 'nextCreate' | 'nextReady'; step: Step['kind'] }
  | { op: 'settleCreate'; ok: boolean }
  | { op: 'settleReady'; ok: boolean }
  | { op: 'validateResult'; alive: boolean }
  | { op: 'retire'; pick: number }
  | { op: 'refresh' }
  | { op: 'close' };

const stepKind = fc.constantFrom<Step['kind']>('ok', 'ok', 'fail', 'nothing', 'hold');
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 18,
    arbitrary: fc.record({
      op: fc.constant('acquire' as const),
      timeoutMs: fc.option(fc.integer({ min: 1, max: 300 }), { nil: undefined }),
      abortable: fc.boolean(),
    }),
  },
  {
    weight: 14,
    arbitrary: fc.record({
      op: fc.constantFrom('release' as const, 'fail' as const, 'doubleRelease' as const),
      pick: fc.nat(),
    }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('abort' as const), pick: fc.nat() }) },
  { weight: 9, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 400 }) }) },
  {
    weight: 4,
    arbitrary: fc.record({ op: fc.constantFrom('nextCreate' as const, 'nextReady' as const), step: stepKind }),
  },
  {
    weight: 5,
    arbitrary: fc.record({ op: fc.constantFrom('settleCreate' as const, 'settleReady' as const), ok: fc.boolean() }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('validateResult' as const), alive: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('retire' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.constant({ op: 'refresh' as const }) },
  { weight: 1, arbitrary: fc.constant({ op: 'close' as const }) },
);

const configArb = fc.record({
  clientLimit: fc.integer({ min: 1, max: 3 }),
  maxSize: fc.integer({ min: 1, max: 3 }),
  minSizeShare: fc.integer({ min: 0, max: 100 }),
  strategy: fc.constantFrom('spread' as const, 'pack' as const),
  maxLifetimeMs: fc.constantFrom(Infinity, 500, 2_000),
  growAt: fc.constantFrom(1, 0.5),
});

interface Pending {
  seq: number;
  abort: AbortController | undefined;
  done: boolean;
}

type Config = typeof configArb extends fc.Arbitrary<infer C> ? C : never;

async function runSchedule(config: Config, ops: Op[]): Promise<void> {
  const minSize = Math.floor((config.maxSize * config.minSizeShare) / 100);
  const connector = new FakeConnector();
  const { pool, clock } = makePool(
    {
      clientLimit: config.clientLimit,
      maxSize: config.maxSize,
      minSize,
      strategy: config.strategy,
      maxLifetimeMs: config.maxLifetimeMs,
      growAt: config.growAt,
      maxIdleMs: 700,
      createTimeoutMs: 150,
      validateAfterIdleMs: 250,
      reapIntervalMs: 100,
    },
    connector,
  );
  const held: Lease<FakeConnection>[] = [];
  const released = new Set<Lease<FakeConnection>>();
  const pending: Pending[] = [];
  const served: number[] = [];
  let seq = 0;
  let closing: Promise<void> | undefined;

  const check = (where: string) => {
    const s = pool.stats();
    const rows = s.connections;
    const context = `${where}: ${JSON.stringify({ ...s, connections: rows })}`;
    for (const row of rows) {
      if (row.clients > row.clientLimit || row.clientLimit > config.clientLimit)
        throw new Error(`clients over the limit at ${context}`);
    }
    const rotating = rows.filter((r) => r.rotating).length;
    if (s.size > config.maxSize || s.opening + s.ready > config.maxSize + rotating)
      throw new Error(`over maxSize at ${context}`);
    const outstanding = held.filter((l) => !released.has(l)).length;
    if (s.clients !== outstanding)
      throw new Error(`pool counts ${s.clients} clients, ${outstanding} leases are out, at ${context}`);
    if (s.counters.released !== released.size)
      throw new Error(`released ${s.counters.released} vs ${released.size} at ${context}`);
    const withValue = rows.filter(
      (r) => r.state === 'establishing' || r.state === 'ready' || r.state === 'draining',
    ).length;
    if (connector.created - connector.closedCount !== connector.live.size || connector.live.size !== withValue) {
      throw new Error(
        `created ${connector.created} − closed ${connector.closedCount} ≠ alive ${withValue} at ${context}`,
      );
    }
    if (s.waiting > 0 && rows.some((r) => r.state === 'ready' && !r.validating && r.clients < r.clientLimit)) {
      throw new Error(`a waiter waits while a ready connection has room at ${context}`);
    }
    for (let i = 1; i < served.length; i++)
      if (served[i]! < served[i - 1]!) throw new Error(`not FIFO: ${served.join(',')}`);
  };

  for (const [i, step] of ops.entries()) {
    switch (step.op) {
      case 'acquire': {
        const p: Pending = { seq: seq++, abort: step.abortable ? new AbortController() : undefined, done: false };
        pending.push(p);
        pool.acquire({ timeoutMs: step.timeoutMs, signal: p.abort?.signal }).then(
          (lease) => {
            p.done = true;
            served.push(p.seq);
            held.push(lease);
          },
          () => {
            p.done = true;
          },
        );
        break;
      }
      case 'release':
      case 'fail':
      case 'doubleRelease': {
        const out = held.filter((l) => !released.has(l));
        const lease = out[step.pick % Math.max(1, out.length)];
        if (!lease) break;
        if (step.op === 'fail') lease.fail(new Error('broken'));
        else lease.release();
        if (step.op === 'doubleRelease') lease.release();
        released.add(lease);
        break;
      }
      case 'abort': {
        const waiting = pending.filter((p) => !p.done && p.abort);
        waiting[step.pick % Math.max(1, waiting.length)]?.abort!.abort(new Error('aborted'));
        break;
      }
      case 'advance':
        await clock.advance(step.ms);
        break;
      case 'nextCreate':
        connector.createSteps.push({ kind: step.step });
        break;
      case 'nextReady':
        connector.readySteps.push({ kind: step.step });
        break;
      case 'settleCreate':
        if (connector.heldCreates.length) connector.releaseCreate(step.ok ? undefined : new Error('late failure'));
        break;
      case 'settleReady':
        if (connector.heldReadies.length) connector.releaseReady(step.ok);
        break;
      case 'validateResult':
        connector.validateResult = step.alive;
        break;
      case 'retire': {
        const live = [...connector.live];
        live[step.pick % Math.max(1, live.length)]?.ctx.retire(new Error('peer reset'));
        break;
      }
      case 'refresh':
        pool.refresh();
        break;
      case 'close':
        closing ??= pool.close({ graceMs: 200 });
        break;
    }
    await flush();
    check(`step ${i} (${JSON.stringify(step)})`);
  }

  // Shut down, let every held create and readiness check land, and nothing may stay open.
  closing ??= pool.close({ graceMs: 200 });
  await clock.advance(200);
  while (connector.heldCreates.length || connector.heldReadies.length) {
    if (connector.heldCreates.length) connector.releaseCreate();
    if (connector.heldReadies.length) connector.releaseReady(true);
    await flush();
  }
  await clock.advance(1_000);
  await closing;
  check('after close');
  if (connector.live.size !== 0) throw new Error(`${connector.live.size} connections left open after close`);
  if (pool.stats().connections.length !== 0)
    throw new Error(`rows left after close: ${JSON.stringify(pool.stats().connections)}`);
  if (pending.some((p) => !p.done)) throw new Error('an acquire never settled');
}

describe('random schedules (property-based)', () => {
  it('keeps every invariant after every step, over thousands of schedules', async () => {
    await fc.assert(
      fc.asyncProperty(
        configArb,
        fc.array(opArb, { minLength: 1, maxLength: 60, size: 'max' }),
        async (config, ops) => {
          await runSchedule(config, ops);
        },
      ),
      { numRuns: 5_000 },
    );
  }, 300_000);
});
