import type { Admission, AdmissionLimiter, AdmissionRequest, PoolCounters, PoolStats } from '../contracts/index.js';
import type { AcquireOptions } from '../options/index.js';
import {
  type AbortHook,
  ConnectionsExhaustedError,
  hookAbort,
  PoolClosedError,
  type Timers,
  unhookAbort,
} from '../common/index.js';
import type { Lease } from './lease.js';

/** What the gate needs of its pool. */
export interface GatedPool<T> {
  readonly name: string;
  isClosed(): boolean;
  readonly acquireTimeoutMs: number;
  readonly timers: Timers;
  readonly counters: PoolCounters;
  /** Aborted when close() begins. */
  readonly closeSignal: AbortSignal;
  /** Keeps the process alive while a wait is pending (see Clock.keepAlive). */
  hold(): void;
  unhold(): void;
  stats(): PoolStats;
  /** The pool's own acquire, after admission: the lease takes `admission` over; a caller that gets no connection gives it back. */
  acquireConnection(options: AcquireOptions, admission: Admission): Promise<Lease<T>>;
}

/**
 * The admission limiter in front of a pool: a caller is admitted first, then waits for a
 * connection with what is left of the same deadline; its lease gives the admission back on
 * release. The caller's signal and close() end a wait in the limiter whatever the limiter does.
 */
export class AdmissionGate<T> {
  constructor(
    readonly pool: GatedPool<T>,
    readonly limiter: AdmissionLimiter,
  ) {}

  acquire(options: AcquireOptions | undefined): Promise<Lease<T>> {
    const { pool, limiter } = this;
    // The fast path: an in-process slot free now, handed to the pool's own acquire, whose lease
    // takes it over (no promise, timer or listener of the gate's own). A caller's signal takes the full path.
    if (limiter.tryAdmit !== undefined && options?.signal === undefined) {
      const timeoutMs = options?.timeoutMs ?? pool.acquireTimeoutMs;
      const request = { pool: pool.name, key: options?.key, timeoutMs, signal: pool.closeSignal };
      const admission = limiter.tryAdmit(request);
      if (admission !== undefined) return pool.acquireConnection({ timeoutMs }, admission);
      return limiter.settlesByDeadline === true ? this.#waitFor(request) : this.#acquire(options, false);
    }
    return this.#acquire(options, true);
  }

  /**
   * A wait that the limiter ends by the deadline and close() by itself, for a caller without a
   * signal: no race, and no suspended function of the gate's own (thousands wait under overload,
   * and what each holds is what the young generation's collector copies, stalling every call in
   * flight while it does).
   */
  #waitFor(request: AdmissionRequest): Promise<Lease<T>> {
    const pool = this.pool;
    const started = pool.timers.now();
    pool.hold();
    return this.limiter.admit(request).then(
      (admission) => {
        pool.unhold();
        return this.#connectionFor(admission, undefined, request.timeoutMs, started);
      },
      (err: unknown) => {
        pool.unhold();
        throw err;
      },
    );
  }

  /** Admission (waiting for it if the limiter does), then a connection. `tryFirst`: a slot free now was not looked for yet. */
  async #acquire(options: AcquireOptions | undefined, tryFirst: boolean): Promise<Lease<T>> {
    const { pool, limiter } = this;
    const started = pool.timers.now();
    const timeoutMs = options?.timeoutMs ?? pool.acquireTimeoutMs;
    const signal = options?.signal;
    // close() ends a wait in the limiter; the caller's own signal does too.
    const both = signal === undefined ? undefined : this.#eitherSignal(signal);
    const stop = both?.signal ?? pool.closeSignal;
    const request = { pool: pool.name, key: options?.key, timeoutMs, signal: stop };
    let admission: Admission | undefined;
    let held = false;
    try {
      // A slot free now (an in-process limiter) is taken at once. A wait that ends by the request's
      // deadline and signal by itself is awaited as it is (a second timer, hook and promise for
      // each of thousands of waiters is what a deep queue's collector copies). Any other is raced.
      admission = tryFirst ? limiter.tryAdmit?.(request) : undefined;
      if (admission === undefined && limiter.settlesByDeadline === true) {
        pool.hold();
        held = true;
        admission = await limiter.admit(request);
      } else admission ??= await this.#admitWithin(limiter.admit(request), timeoutMs, stop);
    } catch (err) {
      if (signal?.aborted && err === signal.reason) pool.counters.aborted++;
      throw err;
    } finally {
      if (held) pool.unhold();
      both?.unlink();
    }
    return this.#connectionFor(admission, signal, timeoutMs, started);
  }

  /** A connection for an admitted caller, within what is left of its deadline; the admission goes back if none comes. */
  #connectionFor(
    admission: Admission,
    signal: AbortSignal | undefined,
    timeoutMs: number,
    started: number,
  ): Promise<Lease<T>> {
    const pool = this.pool;
    // Admitted while the pool closed or the caller gave up: never join the queue.
    if (pool.isClosed()) {
      admission.release();
      return Promise.reject(new PoolClosedError(pool.name));
    }
    if (signal?.aborted) {
      admission.release();
      pool.counters.aborted++;
      return Promise.reject(signal.reason);
    }
    const left = Math.max(1, timeoutMs - (pool.timers.now() - started));
    return pool.acquireConnection({ signal, timeoutMs: left }, admission);
  }

  /**
   * An admission raced against the deadline and `stop` (the caller's abort or close()), which hold
   * whatever the limiter does (a Redis round trip hears no signal); one that answers after either
   * is given back.
   */
  #admitWithin(admitting: Promise<Admission>, timeoutMs: number, stop: AbortSignal): Promise<Admission> {
    const pool = this.pool;
    pool.hold();
    return new Promise<Admission>((resolve, reject) => {
      let over = false;
      const settle = (): void => {
        over = true;
        pool.timers.clear(timer);
        unhookAbort(stop, onStop);
        pool.unhold();
      };
      const end = (err: unknown): void => {
        settle();
        reject(err);
      };
      const onStop: AbortHook = { aborted: end };
      const timer = pool.timers.set(() => {
        pool.counters.timeouts++;
        end(new ConnectionsExhaustedError(pool.name, 'admission', timeoutMs, pool.stats()));
      }, timeoutMs);
      admitting.then(
        (admission) => {
          if (over) return admission.release();
          settle();
          resolve(admission);
        },
        (err: unknown) => {
          if (!over) end(err);
        },
      );
      // The pool's close signal, unless the caller gave one: shared by every waiter, hooked once.
      if (stop.aborted) end(stop.reason);
      else hookAbort(stop, onStop);
    });
  }

  /** A signal aborted by the caller's or by close(), whichever comes first; `unlink` once it is no longer needed. */
  #eitherSignal(signal: AbortSignal): { signal: AbortSignal; unlink: () => void } {
    const both = new AbortController();
    const closing = this.pool.closeSignal;
    const onCaller = () => both.abort(signal.reason);
    const onClose = () => both.abort(closing.reason);
    signal.addEventListener('abort', onCaller, { once: true });
    closing.addEventListener('abort', onClose, { once: true });
    return {
      signal: both.signal,
      unlink: () => {
        signal.removeEventListener('abort', onCaller);
        closing.removeEventListener('abort', onClose);
      },
    };
  }
}
