import type { Admission, AdmissionLimiter, AdmissionRequest, PoolCounters, PoolStats } from '../contracts/index.js';
import type { AcquireOptions } from '../options/index.js';
import type { PoolTracing } from '../observation/index.js';
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
  /** The application's tracing (a span for each admission that waits), or null. */
  readonly tracing: PoolTracing | null;
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
      const request = {
        pool: pool.name,
        key: options?.key,
        class: options?.class,
        timeoutMs,
        signal: pool.closeSignal,
      };
      const admission = limiter.tryAdmit(request);
      return admission === undefined
        ? this.#acquire(options, request)
        : pool.acquireConnection({ timeoutMs }, admission);
    }
    return this.#acquire(options, undefined);
  }

  /**
   * Admission (waiting for it if the limiter does), then a connection. `tried`: the request a
   * slot free now was already looked for with (a caller without a signal); undefined: look here.
   * No suspended function of its own: under overload thousands wait, and what each holds is what
   * the young generation's collector copies, stalling every call in flight while it does.
   */
  #acquire(options: AcquireOptions | undefined, tried: AdmissionRequest | undefined): Promise<Lease<T>> {
    const { pool, limiter } = this;
    const started = pool.timers.now();
    const signal = options?.signal;
    // close() ends a wait in the limiter; the caller's own signal does too.
    const both = signal === undefined ? undefined : this.#eitherSignal(signal);
    const request = tried ?? {
      pool: pool.name,
      key: options?.key,
      class: options?.class,
      timeoutMs: options?.timeoutMs ?? pool.acquireTimeoutMs,
      signal: both?.signal ?? pool.closeSignal,
    };
    const { timeoutMs } = request;
    let admitting: Promise<Admission>;
    try {
      const free = tried === undefined ? limiter.tryAdmit?.(request) : undefined;
      if (free !== undefined) {
        both?.unlink();
        return this.#connectionFor(free, signal, timeoutMs, started);
      }
      // A wait that ends by the request's deadline and signal by itself is taken as it is (a
      // second timer, hook and promise for each waiter would be all that a race adds); any other is raced.
      admitting =
        limiter.settlesByDeadline === true
          ? limiter.admit(request)
          : this.#admitWithin(limiter.admit(request), timeoutMs, request.signal ?? pool.closeSignal);
    } catch (err) {
      both?.unlink();
      return Promise.reject(err);
    }
    if (pool.tracing !== null) admitting = pool.tracing.waited(pool.name, 'admission', timeoutMs, admitting);
    pool.hold();
    return admitting.then(
      (admission) => {
        pool.unhold();
        both?.unlink();
        return this.#connectionFor(admission, signal, timeoutMs, started);
      },
      (err: unknown) => {
        pool.unhold();
        both?.unlink();
        if (signal?.aborted && err === signal.reason) pool.counters.aborted++;
        throw err;
      },
    );
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
    return new Promise<Admission>((resolve, reject) => {
      let over = false;
      const settle = (): void => {
        over = true;
        pool.timers.clear(timer);
        unhookAbort(stop, onStop);
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
