import { AsyncLocalStorage } from 'node:async_hooks';
import { backoffMs, messageOf, PoolClosedError, type PoolLogger, type Timers } from '../common/index.js';
import type { Connector } from '../contracts/index.js';
import type { PoolTracing } from '../observation/index.js';
import { kEnded, kRaw, kReleaseThrown, kRetireAtEnd, type Lease } from './lease.js';
import type { RetryOptions, UseOptions } from '../options/index.js';
import { ScopeTurn, TurnUnit } from './scope-turn.js';

/** What `use()` needs of its pool. */
export interface UsingPool<T> {
  /** The pool itself: the key of its scopes. */
  readonly pool: object;
  readonly name: string;
  readonly logger: PoolLogger;
  readonly connector: Connector<T>;
  readonly timers: Timers;
  /** Its connections serve one caller at a time (clientLimit 1): a scope lends its own to one unit of work at a time. */
  readonly exclusive: boolean;
  /** The deadline of an acquire without its own. */
  readonly acquireTimeoutMs: number;
  /** The application's tracing (a span for each turn that waits), or null. */
  readonly tracing: PoolTracing | null;
  /** Aborted when the pool closes: a pause between tries ends with PoolClosedError. */
  readonly closeSignal: AbortSignal;
  isClosed(): boolean;
  /** acquire() with the options already checked. */
  acquire(options: UseOptions | undefined): Promise<Lease<T>>;
  /** One more (+1) or one fewer (-1) use() scope of this pool runs now. */
  scopes(delta: 1 | -1): void;
  /** Keeps the process alive while a pause runs. */
  hold(): void;
  unhold(): void;
}

/**
 * @internal `use()` for a decorated method: `pool[kUseOn](body, self, args, options)` runs
 * `body(connection, self, args)`. One body serves every call of the method, so a call makes
 * no closure of its own (what a caller holds while it waits is what a deep queue's collector copies).
 */
export const kUseOn = Symbol('useOn');

/**
 * A decorated method's body: called with the connection, the instance and the call's arguments
 * (a plain call, so a scope runs it directly, with no `call()` in between).
 */
export type MethodBody<T = unknown, R = unknown> = (conn: T, self: unknown, args: unknown[]) => R | Promise<R>;

/** What has `pool.use()`. */
interface UsePool {
  use<V>(fn: (conn: unknown) => V | Promise<V>, options?: UseOptions): Promise<V>;
}

/** A pool that runs method bodies (see {@link kUseOn}). */
export interface MethodPool {
  [kUseOn]<R>(
    body: MethodBody<unknown, R>,
    self: unknown,
    args: unknown[],
    options: UseOptions | undefined,
  ): Promise<R>;
}

/** Runs `body` on `self` in `pool.use()`; a pool without {@link kUseOn} (a test's stand-in) gets a closure. */
export function useOn<R>(
  pool: UsePool & Partial<MethodPool>,
  body: MethodBody<unknown, R>,
  self: unknown,
  args: unknown[],
  options: UseOptions | undefined,
): Promise<R> {
  if (pool[kUseOn] !== undefined) return pool[kUseOn](body, self, args, options);
  return pool.use<R>((conn) => body(conn, self, args), options);
}

/** `fn(conn)`, or a method body on `self` with the call's `args` (see {@link kUseOn}). */
function invoke<T, R>(fn: MethodBody<T, R>, conn: T, self: unknown, args: unknown[] | undefined): R | Promise<R> {
  return args === undefined ? (fn as (conn: T) => R | Promise<R>)(conn) : fn(conn, self, args);
}

/**
 * Runs `fn` with a connection and releases it whatever happens, inside a scope where
 * `pool.current` is the connection. A nested `use()` of the same pool reuses the lease unless
 * `propagation: 'new'`; `propagation: 'none'` neither joins a scope nor opens one (no
 * AsyncLocalStorage at all). With `retry`, an error the connector calls fatal (or `retry.retryOn`
 * accepts) fails the lease and tries again on another connection after a backoff.
 */
export async function runUse<T, R>(
  host: UsingPool<T>,
  fn: (conn: T) => R | Promise<R>,
  options: UseOptions | undefined,
): Promise<R>;
/** A decorated method's call: `body(connection, self, args)`. */
export async function runUse<T, R>(
  host: UsingPool<T>,
  body: MethodBody<T, R>,
  options: UseOptions | undefined,
  self: unknown,
  args: unknown[],
): Promise<R>;
export async function runUse<T, R>(
  host: UsingPool<T>,
  fn: MethodBody<T, R>,
  options: UseOptions | undefined,
  self?: unknown,
  args?: unknown[],
): Promise<R> {
  const propagation = options?.propagation;
  const scoped = propagation !== 'none';
  const outer = propagation === 'new' || !scoped ? undefined : findScope(host.pool);
  if (outer !== undefined) {
    if (!host.exclusive) return invoke(fn, outer.lease.connection as T, self, args);
    return runUnit(host, outer, fn, options, self, args);
  }
  const retry = options?.retry;
  const attempts = retry?.attempts ?? 1;
  for (let attempt = 1; ; attempt++) {
    const lease = await host.acquire(options);
    host.scopes(1);
    let frame: ScopeFrame | undefined;
    try {
      // The scope ends with this use(): a task that outlives it finds the lease no longer live.
      const conn = lease.connection;
      let running: R | Promise<R>;
      if (!scoped) running = invoke(fn, conn, self, args);
      else {
        frame = {
          pool: host.pool,
          lease,
          parent: scopes.getStore(),
          root: undefined,
          turn: undefined,
          body: fn,
        };
        // use()'s own function runs with its one argument; a method body with its three.
        running =
          args === undefined
            ? scopes.run(frame, fn as (conn: T) => R | Promise<R>, conn)
            : scopes.run(frame, fn, conn, self, args);
      }
      const result = await running;
      frame?.turn?.close();
      host.scopes(-1);
      lease[kEnded]({ ok: true, value: result });
      lease.release();
      return result;
    } catch (err) {
      frame?.turn?.close();
      host.scopes(-1);
      lease[kEnded]({ ok: false, error: err });
      const fatal = isFatal(host, err);
      const retryable = attempt < attempts && (fatal || retryOn(host, retry, err));
      if (retryable || fatal) lease.fail(err);
      else lease[kReleaseThrown]();
      if (!retryable) throw err;
      await pause(host, backoffMs(attempt, retry?.baseDelayMs ?? 10, retry?.maxDelayMs ?? 1_000));
    }
  }
}

/**
 * A nested `use()` on an exclusive connection: one unit of work of the scope. A call made inside
 * the unit holding the connection goes in at once; a concurrent sibling waits its turn (within
 * its own deadline), so their transactions and statements never interleave.
 */
async function runUnit<T, R>(
  host: UsingPool<T>,
  outer: ScopeFrame,
  fn: MethodBody<T, R>,
  options: UseOptions | undefined,
  self: unknown,
  args: unknown[] | undefined,
): Promise<R> {
  const root = outer.root ?? outer;
  const turn = (root.turn ??= new ScopeTurn(host.name, host.timers));
  const chain = scopes.getStore();
  const frame: ScopeFrame = { pool: host.pool, lease: outer.lease, parent: chain, root, turn: undefined, body: fn };
  const unit = new TurnUnit(frame);
  if (!turn.tryEnter(unit, chain)) {
    const timeoutMs = options?.timeoutMs ?? host.acquireTimeoutMs;
    const entered = await turnWaited(
      host,
      timeoutMs,
      turn.wait(unit, chain, {
        timeoutMs,
        signal: options?.signal,
        waiter: args === undefined ? 'a nested pool.use()' : `the nested call of ${describeBody(fn)}`,
        scope: describeScope(root),
      }),
    );
    // The scope ended while this waited: the call is outside it now, and takes a lease of its own.
    if (!entered) return runUse(host, fn as MethodBody<T, R>, options, self, args as unknown[]);
  }
  try {
    const conn = outer.lease.connection as T;
    return await (args === undefined
      ? scopes.run(frame, fn as (conn: T) => R | Promise<R>, conn)
      : scopes.run(frame, fn, conn, self, args));
  } finally {
    turn.leave(unit);
  }
}

/**
 * @internal A driver face's unit of work in the caller's scope (a checkout of the `pg.Pool`
 * face): `pool[kEnterUnit](waiter, options)` waits for the scope's turn and gives the unit. Nobody
 * is inside such a unit (the face cannot tell its holder's calls from a sibling's), so every
 * other unit of the scope waits until it ends.
 */
export const kEnterUnit = Symbol('enterUnit');

/**
 * @internal `pool[kLeaseNow]()`: a lease taken at once, without a promise, where `acquire()` with
 * no options would take one at once (a driver face's checkout); else undefined.
 */
export const kLeaseNow = Symbol('leaseNow');

/** @internal `pool[kConnector]`: the connector a pool was made with. */
export const kConnector = Symbol('connector');

/** A unit of work of a scope, held until `end()`. */
export interface ScopeUnit {
  /** The connection itself, never a lease's handle: the face lends its own. */
  readonly connection: unknown;
  /** The scope's lease: live until the scope ends. */
  readonly lease: ScopeLease;
  /** What the scope is called in errors. */
  readonly scope: string;
  /** Ends the unit: the next one goes in. Calling it again does nothing. */
  end(): void;
  /** The scope's connection is retired when the scope ends (it is broken, or its caller said so). */
  retire(reason: unknown): void;
}

/**
 * The unit of work of a face's call in the caller's scope of the pool: undefined outside any
 * scope, or when the scope ended while the call waited (the call then takes its own lease).
 */
export function enterUnit(
  host: UsingPool<unknown>,
  waiter: string,
  options: { timeoutMs?: number; signal?: AbortSignal } | undefined,
): ScopeUnit | undefined | Promise<ScopeUnit | undefined> {
  const outer = findScope(host.pool);
  if (outer === undefined) return undefined;
  const root = outer.root ?? outer;
  const scope = describeScope(root);
  const retire = (reason: unknown) => (outer.lease as Lease<unknown>)[kRetireAtEnd](reason);
  if (!host.exclusive) {
    return { connection: outer.lease[kRaw], lease: outer.lease, scope, end() {}, retire };
  }
  const turn = (root.turn ??= new ScopeTurn(host.name, host.timers));
  const unit = new TurnUnit(undefined);
  const held = (): ScopeUnit => ({
    connection: outer.lease[kRaw],
    lease: outer.lease,
    scope,
    end: () => turn.leave(unit),
    retire,
  });
  const chain = scopes.getStore();
  if (turn.tryEnter(unit, chain)) return held();
  const timeoutMs = options?.timeoutMs ?? host.acquireTimeoutMs;
  return turnWaited(
    host,
    timeoutMs,
    turn.wait(unit, chain, { timeoutMs, signal: options?.signal, waiter, scope }),
  ).then((entered) => (entered ? held() : undefined));
}

/** A wait for the scope's turn, traced as a wait of the caller's when the pool is traced. */
function turnWaited(host: UsingPool<unknown>, timeoutMs: number, wait: Promise<boolean>): Promise<boolean> {
  return host.tracing === null ? wait : host.tracing.waited(host.name, 'turn', timeoutMs, wait);
}

/** What a scope is called in errors: its decorated method, or a use() callback. */
export function describeScope(frame: ScopeFrame): string {
  const root = frame.root ?? frame;
  return root.body === undefined ? 'a pool.use() scope' : describeBody(root.body);
}

function describeBody(body: (...a: never[]) => unknown): string {
  const name = (body as { scopeName?: unknown }).scopeName;
  return typeof name === 'string' ? name : 'a pool.use() callback';
}

/** A pause between tries: it keeps the process alive, and close() ends it with PoolClosedError. */
function pause(host: UsingPool<unknown>, ms: number): Promise<void> {
  if (host.isClosed()) return Promise.reject(new PoolClosedError(host.name));
  host.hold();
  return new Promise<void>((resolve, reject) => {
    const signal = host.closeSignal;
    const onClose = () => {
      host.timers.clear(timer);
      reject(new PoolClosedError(host.name));
    };
    const timer = host.timers.set(() => {
      signal.removeEventListener('abort', onClose);
      resolve();
    }, ms);
    signal.addEventListener('abort', onClose, { once: true });
  }).finally(() => host.unhold());
}

/** The connector's isFatal(); one that throws is logged and means "not fatal". */
function isFatal(host: UsingPool<unknown>, err: unknown): boolean {
  try {
    return host.connector.isFatal?.(err) === true;
  } catch (thrown) {
    host.logger.error(
      `pool "${host.name}": connector.isFatal() threw (${messageOf(thrown)}); the error counts as not fatal`,
      thrown,
    );
    return false;
  }
}

/** The caller's retryOn predicate; one that throws is logged and means "do not retry". */
function retryOn(host: UsingPool<unknown>, retry: RetryOptions | undefined, err: unknown): boolean {
  if (retry?.retryOn === undefined) return false;
  try {
    return retry.retryOn(err) === true;
  } catch (thrown) {
    host.logger.error(`pool "${host.name}": retry.retryOn threw (${messageOf(thrown)}); not retrying`, thrown);
    return false;
  }
}

/** What a scope needs of its lease. */
export interface ScopeLease {
  /** What the scope's code gets: the connection, or the lease's handle on it. */
  readonly connection: unknown;
  /** The connection itself (a driver face lends its own handles on it). */
  readonly [kRaw]: unknown;
  /** False once the lease was given back or its connection closed: the scope has ended. */
  readonly live: boolean;
}

/** One `use()` scope (or one unit of work inside it): the pool, its lease, and the scope around it. */
export interface ScopeFrame {
  readonly pool: object;
  readonly lease: ScopeLease;
  readonly parent: ScopeFrame | undefined;
  /** The frame of the use() that holds the lease, for a unit of work inside it; undefined for that frame itself. */
  readonly root: ScopeFrame | undefined;
  /** On the lease's own frame: who holds its connection, made when a second unit of work first asks. */
  turn: ScopeTurn | undefined;
  /** The callback or method body the frame runs (what errors name). */
  readonly body: ((...a: never[]) => unknown) | undefined;
}

/** One store for every pool: nested scopes of different pools chain through `parent`. */
export const scopes = new AsyncLocalStorage<ScopeFrame>();

/**
 * The innermost live scope of `pool` around the caller, if any. A task started inside `use()`
 * that outlives it still carries the frame (AsyncLocalStorage copies it), but the frame's lease
 * is no longer live, so that task is outside any scope.
 */
export function findScope(pool: object): ScopeFrame | undefined {
  for (let f = scopes.getStore(); f !== undefined; f = f.parent) if (f.pool === pool && f.lease.live) return f;
  return undefined;
}

/** How many live leases of `pool` the caller's enclosing scopes hold. */
export function scopeLeases(pool: object): number {
  let n = 0;
  for (let f = scopes.getStore(); f !== undefined; f = f.parent) if (f.pool === pool && f.lease.live) n++;
  return n;
}
