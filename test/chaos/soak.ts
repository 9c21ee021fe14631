/**
 * The soak: a million operations with faults on real timers, to show that memory stays flat and
 * that every counter of stats() matches what the callers saw. Exits 1 on any mismatch.
 *
 *   npm run soak                 (1,000,000 operations)
 *   npm run soak -- --ops 200000
 */
import {
  ConnectionFailedError,
  ConnectionPool,
  ConnectionsExhaustedError,
  PoolClosedError,
  QueueFullError,
  type Connector,
} from '../../lib/core/index.js';
import { random } from './chaos.js';

const args = process.argv.slice(2);
const at = args.indexOf('--ops');
const OPS = at >= 0 ? Number(args[at + 1]) : 1_000_000;
const WORKERS = 200;
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  console.error('run with node --expose-gc (npm run soak does)');
  process.exit(2);
}

interface Conn {
  id: number;
  closes: number;
}
const rnd = random(2026);
/** Only connections not yet closed are kept, so the soak itself holds no memory per connection. */
const open = new Set<Conn>();
let made = 0;
let closeCalls = 0;
let closedTwice = 0;
let creates = 0;
const connector: Connector<Conn> = {
  async create() {
    creates++;
    await Promise.resolve();
    if (rnd() < 0.01) throw new Error('connect ECONNREFUSED (soak)');
    const conn = { id: ++made, closes: 0 };
    open.add(conn);
    return conn;
  },
  validate: () => rnd() > 0.01,
  close(conn) {
    conn.closes++;
    closeCalls++;
    if (conn.closes > 1) closedTwice++;
    open.delete(conn);
    if (rnd() < 0.01) throw new Error('close failed (soak)');
  },
  isFatal: (err) => err instanceof Error && err.message === 'broken (soak)',
};
const pool = new ConnectionPool(connector, {
  name: 'soak',
  maxSize: 8,
  clientLimit: 4,
  minSize: 2,
  maxLifetimeMs: 200,
  maxIdleMs: 100,
  reapIntervalMs: 20,
  validateAfterIdleMs: 5,
  createTimeoutMs: 50,
  createBackoffMs: 1,
  maxCreateBackoffMs: 20,
  logger: { warn() {}, error() {} },
});

const seen = { acquired: 0, released: 0, timeouts: 0, aborted: 0, failedFast: 0, queueFull: 0, closedErrors: 0 };
const unexpected: unknown[] = [];
process.on('unhandledRejection', (err) => unexpected.push(err));
let done = 0;
const heap: { ops: number; mib: number }[] = [];

function refused(err: unknown, reason?: unknown): void {
  if (reason !== undefined && err === reason) seen.aborted++;
  else if (err instanceof ConnectionsExhaustedError) seen.timeouts++;
  else if (err instanceof ConnectionFailedError) seen.failedFast++;
  else if (err instanceof QueueFullError) seen.queueFull++;
  else if (err instanceof PoolClosedError) seen.closedErrors++;
  else unexpected.push(err);
}

async function operation(): Promise<void> {
  const r = rnd();
  if (r < 0.9) {
    // A plain acquire and release; some fail the connection, some release twice.
    let lease;
    try {
      lease = await pool.acquire();
    } catch (err) {
      return refused(err);
    }
    seen.acquired++;
    await undefined;
    seen.released++;
    if (r < 0.005) lease.fail(new Error('broken (soak)'));
    else lease.release();
    if (r < 0.01) lease.release();
  } else if (r < 0.94) {
    // A caller that gives up: aborted before, or while waiting.
    const controller = new AbortController();
    const reason = new Error('caller gone (soak)');
    if (r < 0.91) controller.abort(reason);
    else queueMicrotask(() => controller.abort(reason));
    try {
      const lease = await pool.acquire({ signal: controller.signal });
      seen.acquired++;
      seen.released++;
      lease.release();
    } catch (err) {
      refused(err, reason);
    }
  } else if (r < 0.97) {
    // A caller in a hurry.
    try {
      const lease = await pool.acquire({ timeoutMs: 1 });
      seen.acquired++;
      await new Promise((resolve) => setImmediate(resolve));
      seen.released++;
      lease.release();
    } catch (err) {
      refused(err);
    }
  } else {
    // use() with a failure that breaks the connection, retried once.
    let tries = 0;
    try {
      await pool.use(
        () => {
          tries++;
          seen.acquired++;
          seen.released++;
          if (tries === 1) throw new Error('broken (soak)');
          return tries;
        },
        { retry: { attempts: 2, baseDelayMs: 0 } },
      );
    } catch (err) {
      refused(err);
    }
  }
}

async function worker(): Promise<void> {
  while (done < OPS) {
    const n = ++done;
    await operation();
    if (n % 100_000 === 0) {
      gc!();
      heap.push({ ops: n, mib: process.memoryUsage().heapUsed / 2 ** 20 });
    }
  }
}

const started = Date.now();
await pool.warmup();
await Promise.all(Array.from({ length: WORKERS }, worker));
const s = pool.stats();
await pool.close();
await new Promise((resolve) => setTimeout(resolve, 100));
const seconds = (Date.now() - started) / 1000;

const problems: string[] = [];
for (const key of ['acquired', 'released', 'timeouts', 'aborted', 'failedFast'] as const) {
  if (s.counters[key] !== seen[key])
    problems.push(`counters.${key} ${s.counters[key]} ≠ ${seen[key]} seen by the callers`);
}
if (s.counters.createsStarted !== creates)
  problems.push(`counters.createsStarted ${s.counters.createsStarted} ≠ ${creates} creates`);
if (pool.stats().counters.closed !== closeCalls)
  problems.push(`counters.closed ${pool.stats().counters.closed} ≠ ${closeCalls} close() calls`);
if (open.size > 0 || closedTwice > 0)
  problems.push(`${open.size} connection(s) never closed, ${closedTwice} closed twice`);
if (s.clients !== 0 || s.waiting !== 0) problems.push(`after the run: ${s.clients} clients, ${s.waiting} waiting`);
if (unexpected.length > 0) problems.push(`${unexpected.length} unexpected error(s), first: ${String(unexpected[0])}`);
const settled = heap.slice(1); // the first sample includes warm-up growth
const growth = settled.length > 1 ? settled[settled.length - 1]!.mib - settled[0]!.mib : 0;
if (growth > 4)
  problems.push(
    `heap grew ${growth.toFixed(2)} MiB between ${settled[0]!.ops} and ${settled[settled.length - 1]!.ops} operations`,
  );

console.log(`soak: ${done.toLocaleString('en')} operations by ${WORKERS} workers in ${seconds.toFixed(1)} s`);
console.log(`heap after gc (MiB): ${heap.map((h) => `${h.ops / 1000}k ${h.mib.toFixed(2)}`).join(', ')}`);
console.log(`growth from ${settled[0]?.ops ?? 0} operations on: ${growth.toFixed(2)} MiB`);
console.log(`counters: ${JSON.stringify(s.counters)}`);
console.log(
  `callers saw: ${JSON.stringify(seen)}; connections made ${made}, each closed once: ${open.size === 0 && closedTwice === 0}`,
);
if (problems.length > 0) {
  console.log(`FAILED:\n  ${problems.join('\n  ')}`);
  process.exit(1);
}
console.log('every counter matches; no unexpected error');
