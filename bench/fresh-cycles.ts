/**
 * This pool's warm acquire + release against a bare FIFO semaphore, each in a process of its own.
 * In the main bench's one process every contender (pools with limiters, metrics, groups, the
 * peers) has run before the ratio is taken: the pool's call sites carry the JIT feedback of every
 * configuration, and a deep queue meets an old generation filled by earlier rows. Here each
 * variant warms and runs alone, the variants taken in turn.
 *
 * Run by `npm run bench`; `node dist-bench/bench/fresh-cycles.js <variant> <shape>` prints the
 * best of five rounds (cycles per second) as JSON.
 */
import { MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { ProcessHold, systemClock, Timers } from '../lib/core/common/clock.js';
import { ConnectionPool, poolMetricProducer, type PoolOptions } from '../lib/core/index.js';
import { ConnectionIndex } from '../lib/core/connections/connection-index.js';
import { newCounters } from '../lib/core/pool/pool-report.js';
import { PoolQueue } from '../lib/core/waiting/pool-queue.js';
import { SharedConnection } from '../lib/core/connections/shared-connection.js';
import { AdaptiveLimiter, LocalLimiter, type ConcurrencyLimiter } from '../lib/limits/index.js';
import { alternating, callRound, serveWhenRun, type GcShare, type Rounds } from './fresh-process.js';

/** Acquire, hold for one microtask, release. */
export type Cycle = () => Promise<void>;

/**
 * `semaphore`: a bare semaphore of permits with a FIFO of waiters, the floor of any pool's cost.
 * `semaphore with leases`: the same, handing each caller a lease object through a promise (as any
 * `acquire(): Promise<Lease>` must) whose `release()` gives the permit back, with nothing more than
 * that takes (a waiting caller's one promise resolved with its lease): what the API's shape costs
 * before any pool bookkeeping.
 */
export type FreshVariant =
  | 'pool'
  | 'semaphore'
  | 'semaphore with leases'
  | QueueVariant
  | IndexVariant
  | LimitedVariant
  | MetricsVariant
  | LocalLimiterVariant;

/**
 * The semaphore with leases whose waiting callers queue in the pool's own queue (`PoolQueue`: a
 * waiter record each, in a ring that takes a caller out from anywhere, dated for its deadline,
 * the process held while any waits): what the queue's guarantees cost (every caller's
 * `acquireTimeoutMs`, an abort that leaves at once), apart from the pool's bookkeeping of
 * connections. Measured where callers queue.
 */
export type QueueVariant = "semaphore with the pool's queue";
export const QUEUE_VARIANT: QueueVariant = "semaphore with the pool's queue";

/**
 * The semaphore with leases whose permits are connections in the pool's own index
 * (`ConnectionIndex`): a checkout picks the connection with the fewest clients (the most recently
 * used among equals) and refiles it, and so does a release. What choosing among shared
 * connections costs, apart from the rest of the pool's bookkeeping. Measured where no caller
 * queues (a queued caller is handed its connection without the index).
 */
export type IndexVariant = "semaphore with the pool's index";
export const INDEX_VARIANT: IndexVariant = "semaphore with the pool's index";

/**
 * The pool's warm acquire + release with its timing histograms on, on a real SDK MeterProvider
 * and reader: given `poolMetricProducer()` by the application, or plain (as the OpenTelemetry docs
 * register one; the pool gives the reader a producer itself); and metrics off reading the clock
 * twice per cycle, as a timing that read the clock per lease would (the control). Against `pool`:
 * metrics off.
 */
export type MetricsVariant =
  'metrics through the producer' | 'metrics through a plain MeterProvider' | 'two clock reads per cycle';
export const METRICS_VARIANTS: readonly MetricsVariant[] = [
  'metrics through the producer',
  'metrics through a plain MeterProvider',
  'two clock reads per cycle',
];

/**
 * The pool's warm acquire + release with a `LocalLimiter` in front that has room (`limiter`, as
 * `limits` without Redis makes): against `pool`, what an in-process admission costs a cycle.
 */
export type LocalLimiterVariant = 'pool with a LocalLimiter';
export const LOCAL_LIMITER_VARIANT: LocalLimiterVariant = 'pool with a LocalLimiter';

/** A reader that collects only when asked: what is measured is the recording. */
class QuietReader extends MetricReader {
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

let clockSink = 0;

/**
 * The pool through `use()` (a body that awaits once, no scope) with a limiter in front that has
 * room: a `LocalLimiter`, or an `AdaptiveLimiter` that learns from each call's end. In one process
 * the adaptive rows run after every other configuration has left its JIT feedback at the pool's
 * call sites; here each runs alone.
 */
export type LimitedVariant = 'use(), LocalLimiter' | 'use(), AdaptiveLimiter (aimd)' | 'use(), AdaptiveLimiter (vegas)';
export const LIMITED_VARIANTS: readonly LimitedVariant[] = [
  'use(), LocalLimiter',
  'use(), AdaptiveLimiter (aimd)',
  'use(), AdaptiveLimiter (vegas)',
];

function limiterOf(variant: LimitedVariant): ConcurrencyLimiter {
  if (variant === 'use(), LocalLimiter') return new LocalLimiter({ global: 1_000_000 });
  const algorithm = variant === 'use(), AdaptiveLimiter (aimd)' ? 'aimd' : 'vegas';
  return new AdaptiveLimiter({ adaptive: { algorithm, initial: 1_000_000, max: 1_000_000 } });
}

/** Callers and connections: one caller, 100 callers on 10, and 10,000 on 1,000 (9,000 queued). */
export const SHAPES = {
  'exclusive, 1 caller': { callers: 1, maxSize: 10, total: 1_000_000 },
  'exclusive, 100 callers': { callers: 100, maxSize: 10, total: 1_000_000 },
  'deep queue: 10,000 callers, maxSize 1,000': { callers: 10_000, maxSize: 1_000, total: 1_000_000 },
} as const;
export type FreshShape = keyof typeof SHAPES;

/**
 * `max` permits with a FIFO of waiters (an array with a moving head). A release that frees a
 * permit for a waiter resolves the waiter's one promise with `handed()`.
 */
function permits<V>(max: number, handed: () => V) {
  let free = max;
  const queue: ((value: V) => void)[] = [];
  let head = 0;
  return {
    /** Takes a free permit, if there is one. */
    take(): boolean {
      if (free === 0) return false;
      free--;
      return true;
    },
    wait(): Promise<V> {
      return new Promise<V>((resolve) => queue.push(resolve));
    },
    release(): void {
      if (head < queue.length) {
        queue[head++]!(handed());
        if (head > 4096 && head * 2 > queue.length) {
          queue.splice(0, head);
          head = 0;
        }
      } else free++;
    },
  };
}

/** A bare semaphore of `max` permits with a FIFO of waiters: nothing to await when a permit is free. */
export function semaphore(max: number): { acquire(): Promise<void> | undefined; release(): void } {
  const p = permits<void>(max, () => undefined);
  return { acquire: () => (p.take() ? undefined : p.wait()), release: p.release };
}

/** A lease of the semaphore: released once. */
class PermitLease {
  #done = false;
  constructor(readonly permits: { release(): void }) {}
  release(): void {
    if (this.#done) return;
    this.#done = true;
    this.permits.release();
  }
}

/**
 * The same semaphore handing out leases, with no more than a `Promise<Lease>` API needs: a free
 * permit is a resolved promise of a new lease; a waiting caller's one promise is resolved with
 * its lease by the release that frees the permit (no second promise chained to make it).
 */
function leaseSemaphore(max: number): { acquire(): Promise<PermitLease> } {
  const p: ReturnType<typeof permits<PermitLease>> = permits(max, () => new PermitLease(p));
  return { acquire: () => (p.take() ? Promise.resolve(new PermitLease(p)) : p.wait()) };
}

/** The semaphore with leases, its waiting callers queued in the pool's {@link PoolQueue} with the pool's default deadline. */
function queueSemaphore(max: number): { acquire(): Promise<PermitLease> } {
  const timers = new Timers(systemClock);
  const queue = new PoolQueue<PermitLease>(
    timers,
    new ProcessHold(timers),
    newCounters(),
    () => () => new Error('no permit in time'),
  );
  let free = max;
  const permits = {
    release(): void {
      const w = queue.length !== 0 ? queue.next() : null;
      if (w !== null) w.resolve(new PermitLease(permits));
      else free++;
    },
  };
  return {
    acquire: () =>
      free > 0
        ? (free--, Promise.resolve(new PermitLease(permits)))
        : queue.join(60_000, undefined, undefined, undefined),
  };
}

/** A lease of a connection of {@link indexSemaphore}: released once. */
class ConnectionLease {
  #done = false;
  constructor(
    readonly permits: { release(conn: SharedConnection<null>): void },
    readonly conn: SharedConnection<null>,
  ) {}
  release(): void {
    if (this.#done) return;
    this.#done = true;
    this.permits.release(this.conn);
  }
}

/** The semaphore with leases over `max` exclusive connections in the pool's {@link ConnectionIndex}; its waiting callers in a FIFO of resolvers. */
function indexSemaphore(max: number): { acquire(): Promise<ConnectionLease> } {
  const index = new ConnectionIndex<null>(1, 'spread');
  for (let id = 0; id < max; id++) index.add(new SharedConnection<null>(id, 1));
  const waiting: ((lease: ConnectionLease) => void)[] = [];
  let head = 0;
  const permits = {
    release(conn: SharedConnection<null>): void {
      if (head < waiting.length) {
        waiting[head++]!(new ConnectionLease(permits, conn));
        if (head > 4096 && head * 2 > waiting.length) {
          waiting.splice(0, head);
          head = 0;
        }
        return;
      }
      conn.clients--;
      index.update(conn);
    },
  };
  return {
    acquire(): Promise<ConnectionLease> {
      const conn = index.pick();
      if (conn === null) return new Promise((resolve) => waiting.push(resolve));
      conn.clients++;
      index.update(conn);
      return Promise.resolve(new ConnectionLease(permits, conn));
    },
  };
}

/** A warm pool of `maxSize` instant connections, lent to one caller each; `extra` adds options (a limiter, metrics). */
async function warmPool(maxSize: number, extra: Partial<PoolOptions> = {}): Promise<ConnectionPool<{ id: number }>> {
  let ids = 0;
  const pool = new ConnectionPool(
    { create: async () => ({ id: ids++ }) },
    { name: 'bench', clientLimit: 1, maxSize, minSize: maxSize, acquireTimeoutMs: 60_000, ...extra },
  );
  await pool.warmup();
  return pool;
}

async function cycleOf(variant: FreshVariant, maxSize: number): Promise<{ cycle: Cycle; close: () => Promise<void> }> {
  if ((LIMITED_VARIANTS as readonly string[]).includes(variant)) {
    const pool = await warmPool(maxSize, { limiter: limiterOf(variant as LimitedVariant) });
    const body = async () => {
      await undefined;
    };
    const options = { propagation: 'none' } as const;
    return { cycle: () => pool.use(body, options), close: () => pool.close() };
  }
  if (
    variant === 'pool' ||
    variant === 'metrics through the producer' ||
    variant === 'metrics through a plain MeterProvider' ||
    variant === LOCAL_LIMITER_VARIANT
  ) {
    const reader = () =>
      variant === 'metrics through the producer'
        ? new QuietReader({ metricProducers: [poolMetricProducer()] })
        : new QuietReader();
    const extra =
      variant === 'pool'
        ? {}
        : variant === LOCAL_LIMITER_VARIANT
          ? { limiter: new LocalLimiter({ global: 1_000_000 }) }
          : { metrics: new MeterProvider({ readers: [reader()] }).getMeter('bench'), metricTimings: true };
    const pool = await warmPool(maxSize, extra);
    return {
      cycle: async () => {
        const lease = await pool.acquire();
        await undefined;
        lease.release();
      },
      close: () => pool.close(),
    };
  }
  if (variant === 'two clock reads per cycle') {
    const pool = await warmPool(maxSize);
    return {
      cycle: async () => {
        const at = performance.now();
        const lease = await pool.acquire();
        await undefined;
        lease.release();
        clockSink += performance.now() - at;
      },
      close: async () => {
        await pool.close();
        if (clockSink < 0) console.error(clockSink); // read, so the reads are not optimised away
      },
    };
  }
  if (variant === 'semaphore') {
    const permits = semaphore(maxSize);
    return {
      cycle: async () => {
        await permits.acquire();
        await undefined;
        permits.release();
      },
      close: async () => {},
    };
  }
  const leases =
    variant === QUEUE_VARIANT
      ? queueSemaphore(maxSize)
      : variant === INDEX_VARIANT
        ? indexSemaphore(maxSize)
        : leaseSemaphore(maxSize);
  return {
    cycle: async () => {
      const lease = await leases.acquire();
      await undefined;
      lease.release();
    },
    close: async () => {},
  };
}

/**
 * A round is this share of a shape's cycles: short rounds (62,500 cycles, 15-60 ms), many of them.
 * This machine's speed flips between two levels about 1.8x apart within a second; with a quarter
 * per round, three rounds a set, one flip between paired rounds moved a set's ratio, and the
 * ranges were wider (the pool against a bare semaphore, one caller: 0.50-0.79 against 0.60-0.73,
 * the same code in back-to-back runs).
 */
const ROUND_SHARE = 1 / 16;

/** `variant` in `shape`, set up: a round is {@link ROUND_SHARE} of the shape's cycles (cycles per second); the shape's cycles warm it. */
async function setUp(variant: FreshVariant, shape: FreshShape): Promise<Rounds> {
  const { callers, maxSize, total } = SHAPES[shape];
  const { cycle, close } = await cycleOf(variant, maxSize);
  const round = callRound(callers, cycle);
  return { round: () => round(total * ROUND_SHARE), close, warmRounds: 1 / ROUND_SHARE };
}

/** `sets` sets of live processes, one per variant in `shape`, each running `rounds` rounds, the variants in turn (see {@link alternating}). */
export function alternatingFreshCycles<V extends FreshVariant>(
  variants: readonly V[],
  shape: FreshShape,
  sets: number,
  rounds: number,
  onGc?: (shares: Record<V, GcShare>) => void,
): Promise<Record<V, number>[][]> {
  return alternating(import.meta.url, variants, (variant) => [variant, shape], sets, rounds, { gc: onGc });
}

serveWhenRun(import.meta.url, ([variant, shape]) => setUp(variant as FreshVariant, shape as FreshShape));
