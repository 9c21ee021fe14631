import {
  isRefusal,
  type MethodBody,
  PoolConfigError,
  type RefusalError,
  type RetryOptions,
  shown,
  useOn,
  type UseOptions,
} from '../core/index.js';
import { PoolNotFoundError } from './pool-not-found.error.js';
import type { PoolLike } from './pool-registry.js';

/**
 * Options of {@link UsePooled}. `Args`: the parameters `key` reads, from its annotations
 * (`(tenant: string) => tenant`); the decorated method must take them first. Unannotated, they are `any`.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- unannotated key parameters take the method's arguments as they come
export interface UsePooledOptions<Args extends unknown[] = any[]> {
  /** Deadline to get a connection. Default: the pool's `acquireTimeoutMs`. */
  timeoutMs?: number;
  /**
   * Re-run the method on a broken connection (see `pool.use()`). Only for methods that return a
   * promise: a stream may already have emitted, so Observable and async generator methods refuse it.
   */
  retry?: RetryOptions;
  /**
   * The admission key (user, tenant) for the per-key limit, from the method's arguments;
   * undefined: no key from the arguments (the request's, if the module has `requestKey`).
   * `false`: this method's calls never have a key and count against the global limit only, even
   * when the limiter refuses calls without one (`keyless: 'refuse'`).
   */
  key?: ((...args: Args) => string | undefined) | false;
  /**
   * The priority class of the method's calls, for a limiter with `classes`: a class name, or a
   * function of the method's arguments (undefined: the request's, if the module has
   * `requestClass`, else the limiter's default class).
   */
  class?: string | ((...args: Args) => string | undefined);
  /**
   * What to do instead when the call is refused before any of its work ran (a {@link RefusalError}:
   * a limit, the pool's queue, or no connection by the deadline): the name of a method of the same
   * instance, or a function called on it, given the error and the method's arguments. Its result
   * (or its promise's) is the method's. Hand the work to a job queue there (see docs/nest.md,
   * "When admission refuses"). Errors once the method ran, and every other error, are thrown as
   * they are. Only for methods that return a promise.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- called on the instance: `this` is the service
  onRefused?: string | ((this: any, error: RefusalError, ...args: Args) => unknown);
  /**
   * `reuse` (default): a nested call on the same pool runs on the outer lease; `new`: its own
   * lease. `none`: its own lease and no scope (no `pool.current`, no AsyncLocalStorage): the
   * method takes its connection through a `@PooledConnection()` parameter.
   */
  propagation?: 'reuse' | 'new' | 'none';
}

/**
 * One decorated method: its pool's name, its options, and the pool DI gave each instance.
 *
 * The `PooledMethodBinder` binds every instance Nest made when the application starts: the pool
 * is the provider of `getPoolToken(name)` in that application, overrides included. Instances Nest
 * makes later (request-scoped, transient) find it through their class. A call then costs one
 * WeakMap lookup, and the options object is built and checked once unless a `key` reads the arguments.
 */
export class PooledCall {
  readonly #byInstance = new WeakMap<object, PoolLike>();
  readonly #byClass = new WeakMap<object, PoolLike>();
  /** The options of every call, checked once (use() takes them without checking again). */
  readonly #fixed: UseOptions;
  /** The same for the hot path: undefined when no option is set, so use() has nothing to look at. */
  readonly #perCall: UseOptions | undefined;
  /** `key` reads the arguments: each call builds its own options. */
  readonly #keyOf: ((...args: unknown[]) => unknown) | undefined;
  /** `class` reads the arguments: the same. */
  readonly #classOf: ((...args: unknown[]) => unknown) | undefined;
  /** `key` or `class` reads the arguments. */
  readonly #perArgs: boolean;
  /** `onRefused`, as a call on the instance. */
  readonly #onRefused: ((self: unknown, error: RefusalError, args: unknown[]) => unknown) | undefined;
  readonly #unbound: PoolLike;

  constructor(
    /** The pool's name. */
    readonly pool: string,
    /** The method, as `Class.method`. */
    readonly where: string,
    readonly options: UsePooledOptions,
    fixed: UseOptions,
    /** The index of the method's `@PooledConnection()` parameter, if it has one. */
    readonly connectionAt: number | undefined,
  ) {
    this.#fixed = fixed;
    this.#perCall = Object.values(fixed).every((v) => v === undefined) ? undefined : fixed;
    this.#keyOf = typeof options.key === 'function' ? (options.key as (...args: unknown[]) => unknown) : undefined;
    this.#classOf =
      typeof options.class === 'function' ? (options.class as (...args: unknown[]) => unknown) : undefined;
    this.#perArgs = this.#keyOf !== undefined || this.#classOf !== undefined;
    this.#onRefused = handOff(options.onRefused);
    this.#unbound = refusing(
      () =>
        new PoolNotFoundError(
          pool,
          where,
          [],
          `was called on an instance no Nest application bound to a pool: Nest did not make it, its application has not started (app.init(), or moduleRef.init() in a test), or the application does not import PoolModule. A testing module that provides getPoolToken('${pool}') itself needs imports: [PoolModule.forTesting()] too; outside Nest, call pool.use() yourself`,
        ),
    );
  }

  /** Binds the pool of an instance, and of its class (for instances Nest makes later). */
  bind(instance: object | undefined, type: object | undefined, pool: PoolLike): void {
    if (instance !== undefined) this.#byInstance.set(instance, pool);
    if (type !== undefined) this.#byClass.set(type, pool);
  }

  /** The pool of `self`: its own binding, its class's, or one that refuses with a clear error. */
  poolOf(self: unknown): PoolLike {
    if (typeof self !== 'object' || self === null) return this.#unbound;
    return this.#byInstance.get(self) ?? this.#byClass.get(self.constructor) ?? this.#unbound;
  }

  /**
   * The options of one call; the same object every call unless `key` or `class` reads the arguments.
   * @throws PoolConfigError naming the method when `key()` returns something other than a key, or `class()` a class.
   */
  useOptions(args: unknown[], signal?: AbortSignal): UseOptions {
    if (!this.#perArgs) return signal === undefined ? this.#fixed : { ...this.#fixed, signal };
    const options: UseOptions = { ...this.#fixed, signal };
    if (this.#keyOf !== undefined) options.key = this.#picked('key()', 'key', this.#keyOf(...args));
    if (this.#classOf !== undefined) options.class = this.#picked('class()', 'class', this.#classOf(...args));
    return options;
  }

  /** What `key()` or `class()` returned, checked. */
  #picked(subject: string, what: string, value: unknown): string | undefined {
    if (value === undefined || (typeof value === 'string' && value.length > 0)) return value;
    throw this.error(subject, `must return a non-empty string, or undefined for no ${what}; got ${shown(value)}`);
  }

  /**
   * Runs `body` in `pool.use()` on the pool of `self`, as `body(connection, self, args)`: one
   * body serves every call of the method. A `key()` that throws or returns no key rejects, as the
   * call would.
   */
  run(self: unknown, args: unknown[], body: MethodBody): Promise<unknown> {
    if (this.#onRefused !== undefined) return this.#runOrHandOff(self, args, body, this.#onRefused);
    return this.#run(self, args, body);
  }

  /** {@link run}, handing a call refused before its body began to `onRefused`. */
  #runOrHandOff(
    self: unknown,
    args: unknown[],
    body: MethodBody,
    onRefused: (self: unknown, error: RefusalError, args: unknown[]) => unknown,
  ): Promise<unknown> {
    let began = false;
    const marked: MethodBody = (connection, that, params) => {
      began = true;
      return body(connection, that, params);
    };
    Object.defineProperty(marked, 'scopeName', { value: (body as { scopeName?: string }).scopeName });
    return this.#run(self, args, marked).catch((error: unknown) => {
      if (began || !isRefusal(error)) throw error;
      return onRefused(self, error, args);
    });
  }

  #run(self: unknown, args: unknown[], body: MethodBody): Promise<unknown> {
    const pool = this.poolOf(self);
    if (!this.#perArgs) return useOn(pool, body, self, args, this.#perCall); // the hot path: options built once, or none
    let options: UseOptions;
    try {
      options = this.useOptions(args);
    } catch (error) {
      return Promise.reject(error);
    }
    return useOn(pool, body, self, args, options);
  }

  /** An error of this method's use of the pool: "@UsePooled('db') on Catalog.find: key() must ...". */
  error(subject: string, problem: string): PoolConfigError {
    return new PoolConfigError(`@UsePooled('${this.pool}') on ${this.where}`, subject, problem, 'decorator');
  }

  /** The arguments of one run of the method: `args`, with the connection at the `@PooledConnection()` parameter if it has one. */
  argsWith(args: unknown[], connection: unknown): unknown[] {
    if (this.connectionAt === undefined) return args;
    args[this.connectionAt] = connection;
    return args;
  }
}

/** `onRefused` as a call on the instance: a method of it by name, or a function called on it. */
function handOff(
  onRefused: UsePooledOptions['onRefused'],
): ((self: unknown, error: RefusalError, args: unknown[]) => unknown) | undefined {
  if (onRefused === undefined) return undefined;
  if (typeof onRefused === 'function') return (self, error, args) => onRefused.call(self, error, ...args);
  return (self, error, args) => {
    const method = (self as Record<string, unknown>)[onRefused];
    if (typeof method !== 'function') throw error; // checked when decorated: only an instance Nest did not make lacks it
    return (method as (...a: unknown[]) => unknown).call(self, error, ...args);
  };
}

/** A stand-in pool whose every use rejects with a fresh error. */
function refusing(error: () => Error): PoolLike {
  return { use: () => Promise.reject(error()) };
}

/** The decorated methods declared on each prototype. */
const declared = new WeakMap<object, PooledCall[]>();

/** Records a decorated method of `prototype`. */
export function declarePooledCall(prototype: object, call: PooledCall): void {
  const calls = declared.get(prototype);
  if (calls === undefined) declared.set(prototype, [call]);
  else calls.push(call);
}

/** The decorated methods of an object with this prototype, its own and inherited ones. */
export function pooledCallsOf(prototype: object | null): PooledCall[] {
  const calls: PooledCall[] = [];
  for (let p = prototype; p !== null && p !== Object.prototype; p = Object.getPrototypeOf(p) as object | null) {
    const own = declared.get(p);
    if (own !== undefined) calls.push(...own);
  }
  return calls;
}
