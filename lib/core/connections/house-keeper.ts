import type { TimerHandle, Timers } from '../common/index.js';
import type { ResolvedOptions } from '../options/index.js';
import type { SharedConnection } from './shared-connection.js';
import type { RetireReason } from '../contracts/index.js';

/** What the house-keeper sees of its pool, and asks it to do. */
export interface KeptPool<T> {
  readonly options: ResolvedOptions;
  readonly timers: Timers;
  isClosed(): boolean;
  /** Every connection the pool has. */
  connections(): Iterable<SharedConnection<T>>;
  /** Ready connections. */
  readyCount(): number;
  /** Whether another create may start now (maxConcurrentCreates, no backoff running). */
  mayOpen(): boolean;
  retire(conn: SharedConnection<T>, reason: RetireReason): void;
  /** A sweep ended: the pool samples its health. */
  swept(): void;
  /** Opens a replacement for `conn`, which keeps serving until it is ready. */
  rotate(conn: SharedConnection<T>): void;
  /** Opens what `minSize` lacks. */
  fill(): void;
}

/**
 * The pool's background work, every `reapIntervalMs` on one unref'd timer: idle connections past
 * `maxIdleMs` retire (down to `minSize`), connections past their lifetime are rotated (the
 * replacement opens first) when in use or kept for `minSize`, else let go, and `minSize` is
 * topped up. Idle and lifetime ends are noticed at the
 * next check, so they are as fine-grained as `reapIntervalMs`.
 */
export class HouseKeeper<T> {
  #timer: TimerHandle | undefined;

  constructor(readonly pool: KeptPool<T>) {}

  start(): void {
    this.#timer = this.pool.timers.set(() => this.#sweep(), this.pool.options.reapIntervalMs);
  }

  stop(): void {
    this.pool.timers.clear(this.#timer);
    this.#timer = undefined;
  }

  #sweep(): void {
    const pool = this.pool;
    if (pool.isClosed()) return;
    const o = pool.options;
    const now = pool.timers.now();
    for (const conn of pool.connections()) {
      if (conn.state !== 'ready' || conn.validating) continue;
      const spare = conn.clients === 0 && pool.readyCount() > o.minSize;
      if (spare && now - conn.idleSince >= o.maxIdleMs) pool.retire(conn, 'idle');
      else if (now < conn.expiresAt || conn.rotating) continue;
      // Past its lifetime: an idle one nobody needs goes (a replacement would only idle out in
      // turn); one in use or kept for minSize is replaced first, so no caller meets a cold connect.
      else if (spare) pool.retire(conn, 'lifetime');
      else if (pool.mayOpen()) pool.rotate(conn);
    }
    pool.fill();
    pool.swept();
    this.start();
  }
}
