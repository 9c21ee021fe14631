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

/**
 * Reads the priority class of a request (for a limiter with `classes`) from its execution
 * context: `(ctx) => (ctx.switchToHttp().getRequest().user?.plan === 'pro' ? 'live' : 'batch')`.
 * Undefined: the limiter's default class.
 */
export type RequestClassFn = (context: ExecutionContext) => string | undefined;

/** What the module read of the request being handled, for every `@UsePooled` call it makes. */
interface RequestPicks {
  readonly key: string | undefined;
  readonly cls: string | undefined;
}

const requests = new AsyncLocalStorage<RequestPicks>();

/**
 * The admission key `requestKey` gave the request being handled, if any: pass it to a pool you
 * call yourself (`pool.use(fn, { key: currentRequestKey() })`). Undefined outside a request, or
 * when the module has no `requestKey`.
 */
export function currentRequestKey(): string | undefined {
  return requests.getStore()?.key;
}

/**
 * The priority class `requestClass` gave the request being handled, if any: pass it to a pool
 * you call yourself (`pool.use(fn, { class: currentRequestClass() })`).
 */
export function currentRequestClass(): string | undefined {
  return requests.getStore()?.cls;
}

/**
 * Runs every handler of the application with its request's key and class at hand (registered
 * app-wide when the module has `requestKey` or `requestClass`). Interceptors run after guards,
 * so they see what an authentication guard put on the request.
 */
export class RequestKeyInterceptor implements NestInterceptor {
  constructor(
    private readonly keyOf: RequestKeyFn | undefined,
    private readonly classOf: RequestClassFn | undefined,
    /** The registration that set them (`PoolModule.forRoot`), for errors. */
    private readonly method: string,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const key = this.#read(context, 'requestKey', 'a key', this.keyOf);
    const cls = this.#read(context, 'requestClass', 'a class', this.classOf);
    if (key === undefined && cls === undefined) return next.handle();
    // Nest binds the handler's async context where handle() is called: here, inside the request's.
    return requests.run({ key, cls }, () => next.handle());
  }

  #read(
    context: ExecutionContext,
    field: string,
    what: string,
    read: ((context: ExecutionContext) => unknown) | undefined,
  ): string | undefined {
    if (read === undefined) return undefined;
    let value: unknown;
    try {
      value = read(context);
    } catch (error) {
      // Thrown for every request it cannot read (a WebSocket or RPC context, a request with no user).
      throw new PoolConfigError(
        this.method,
        field,
        `threw (${messageOf(error)}); return undefined for a request without ${what}`,
        'module',
        { cause: error },
      );
    }
    if (value === undefined || (typeof value === 'string' && value.length > 0)) return value;
    throw new PoolConfigError(
      this.method,
      field,
      `must return a non-empty string, or undefined for a request without ${what}; got ${shown(value)}`,
      'module',
    );
  }
}

/**
 * The pool of a decorated method in an application with `requestKey` or `requestClass`: a call
 * whose method gave no key of its own (no `key()`, or one that returned undefined; `key: false`
 * is a choice) takes its request's key, and one that gave no class its request's class.
 */
export function withRequestKeys(pool: PoolLike): PoolLike & MethodPool {
  const keyed = (options: UseOptions | undefined): UseOptions | undefined => {
    const picks = requests.getStore();
    if (picks === undefined) return options;
    const key = options?.key !== undefined ? options.key : picks.key;
    const cls = options?.class ?? picks.cls;
    return key === options?.key && cls === options?.class ? options : { ...options, key, class: cls };
  };
  return {
    use: (fn, options) => pool.use(fn, keyed(options)),
    [kUseOn]: (body, self, args, options) => useOn(pool, body, self, args, keyed(options)),
  };
}
