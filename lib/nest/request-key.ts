import { AsyncLocalStorage } from 'node:async_hooks';
import type { CallHandler, ExecutionContext, NestInterceptor } from '@nestjs/common';
import type { Observable } from 'rxjs';
import {
  type ConnectionPool,
  kUseOn,
  messageOf,
  type MethodPool,
  PoolConfigError,
  shown,
  useOn,
  type UseOptions,
} from '../core/index.js';

/** What the Nest layer asks of a pool: `use()` for decorated methods, `stats()` for health (a stand-in may lack it). */
export type PoolLike = Pick<ConnectionPool<unknown>, 'use'> & Partial<Pick<ConnectionPool<unknown>, 'stats'>>;

/**
 * Reads the admission key of a request (a user, a tenant) from its execution context, as
 * @nestjs/throttler's `getTracker` does: `(ctx) => ctx.switchToHttp().getRequest().user?.id`.
 * Undefined: the request has no key (the limiter's `keyless` setting decides).
 */
export type RequestKeyFn = (context: ExecutionContext) => string | undefined;

/** The key of the request being handled, for every `@UsePooled` call it makes. */
const requestKeys = new AsyncLocalStorage<string>();

/**
 * The admission key `requestKey` gave the request being handled, if any: pass it to a pool you
 * call yourself (`pool.use(fn, { key: currentRequestKey() })`). Undefined outside a request, or
 * when the module has no `requestKey`.
 */
export function currentRequestKey(): string | undefined {
  return requestKeys.getStore();
}

/**
 * Runs every handler of the application with its request's key at hand (registered app-wide when
 * the module has `requestKey`). Interceptors run after guards, so `requestKey` sees what an
 * authentication guard put on the request.
 */
export class RequestKeyInterceptor implements NestInterceptor {
  constructor(
    private readonly keyOf: RequestKeyFn,
    /** The registration that set it (`PoolModule.forRoot`), for errors. */
    private readonly method: string,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    let key: unknown;
    try {
      key = this.keyOf(context);
    } catch (error) {
      // Thrown for every request it cannot read (a WebSocket or RPC context, a request with no user).
      throw new PoolConfigError(
        this.method,
        'requestKey',
        `threw (${messageOf(error)}); return undefined for a request without a key`,
        'module',
        { cause: error },
      );
    }
    if (key === undefined) return next.handle();
    if (typeof key !== 'string' || key.length === 0) {
      throw new PoolConfigError(
        this.method,
        'requestKey',
        `must return a non-empty string, or undefined for a request without a key; got ${shown(key)}`,
        'module',
      );
    }
    // Nest binds the handler's async context where handle() is called: here, inside the key's.
    return requestKeys.run(key, () => next.handle());
  }
}

/**
 * The pool of a decorated method in an application with `requestKey`: a call whose method gave
 * no key of its own (no `key()`, or one that returned undefined; `key: false` is a choice) takes
 * its request's key.
 */
export function withRequestKeys(pool: PoolLike): PoolLike & MethodPool {
  const keyed = (options: UseOptions | undefined): UseOptions | undefined => {
    if (options?.key !== undefined) return options;
    const key = requestKeys.getStore();
    return key === undefined ? options : { ...options, key };
  };
  return {
    use: (fn, options) => pool.use(fn, keyed(options)),
    [kUseOn]: (body, self, args, options) => useOn(pool, body, self, args, keyed(options)),
  };
}
