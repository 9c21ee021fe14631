import { isObservable, Observable, type Subscription } from 'rxjs';
import { checkUseOptions } from '../core/call-options.js';
import { optionError, violation, type OptionScope, type Rule } from '../core/option-rules.js';
import {
  PoolConfigError,
  type ConnectionPool,
  type RetryOptions,
  type UseOptions,
} from '../core/index.js';
import { PoolNotFoundError } from './pool-not-found.error.js';
import { holdScope, type HeldScope } from './held-scope.js';
import { poolDirectory } from './pool-directory.js';

/** Options of {@link UsePooled}. */
export interface UsePooledOptions {
  /** Deadline to get a connection. Default: the pool's `acquireTimeoutMs`. */
  timeoutMs?: number;
  /**
   * Re-run the method on a broken connection (see `pool.use()`). Only for methods that return a
   * promise: a stream may already have emitted, so Observable and async generator methods refuse it.
   */
  retry?: RetryOptions;
  /** The admission key (user, tenant) from the method's arguments, for the per-key limit. */
  key?(...args: unknown[]): string;
  /** `reuse` (default): a nested call on the same pool runs on the outer lease; `new`: its own lease. */
  propagation?: 'reuse' | 'new';
}

type Method = (this: unknown, ...args: unknown[]) => unknown;
type Kind = 'promise' | 'observable' | 'generator';

/** `key` picks the admission key from the method's arguments. */
const keyRule: Rule = { says: "a function of the method's arguments", ok: (v) => typeof v === 'function' };

/**
 * Runs the method with a connection of the pool `name` checked out: `pool.current` reads it
 * inside, and it is checked in whatever happens. Async methods hold it until they settle, methods
 * declared to return an `Observable` until it completes, errors or is unsubscribed, async
 * generators until the iteration ends or is abandoned. The pool is looked up when the method is
 * called, so the decorator works in any class: controllers, providers, request-scoped ones.
 */
export function UsePooled(name: string, options: UsePooledOptions = {}): MethodDecorator {
  if (typeof name !== 'string' || name.length === 0) {
    throw optionError({ subject: 'decorator', name: `@UsePooled(${JSON.stringify(name) ?? String(name)})` }, 'the name', 'must be a non-empty string naming a pool');
  }
  const scope: OptionScope = { subject: 'decorator', name: `@UsePooled('${name}')` };
  const invalid =
    checkUseOptions(name, { timeoutMs: options.timeoutMs, retry: options.retry, propagation: options.propagation }) ??
    violation(scope, 'key', options.key, keyRule);
  if (invalid !== undefined) throw invalid;

  return (target, propertyKey, descriptor) => {
    const owner = typeof target === 'function' ? target.name : target.constructor.name;
    const where = `${owner}.${String(propertyKey)}`;
    const original = descriptor.value as unknown;
    if (typeof original !== 'function') {
      throw optionError(scope, where, 'is not a method; @UsePooled decorates methods only');
    }
    const kind = kindOf(original as Method, target, propertyKey);
    if (kind !== 'promise' && options.retry !== undefined) {
      throw optionError(scope, 'retry', `cannot apply to ${where}: it returns a stream, which cannot be re-run once it has emitted`);
    }
    const call = new PooledCall(name, where, options);
    const wrapped = { promise: wrapPromise, observable: wrapObservable, generator: wrapGenerator }[kind](original as Method, call);
    copyIdentity(original as Method, wrapped);
    (descriptor as TypedPropertyDescriptor<unknown>).value = wrapped;
    return descriptor;
  };
}

/** What one decorated method needs at call time: its pool and the options of one call. */
class PooledCall {
  constructor(
    readonly pool: string,
    readonly where: string,
    readonly options: UsePooledOptions,
  ) {}

  find(caller: unknown): ConnectionPool<unknown> {
    const pool = poolDirectory.find(this.pool, caller);
    if (pool === undefined) throw new PoolNotFoundError(this.pool, this.where, poolDirectory.names());
    return pool;
  }

  useOptions(args: unknown[], signal?: AbortSignal): UseOptions {
    const { timeoutMs, retry, propagation, key } = this.options;
    return { timeoutMs, retry, propagation, signal, key: key?.(...args) };
  }
}

function kindOf(method: Method, target: object, propertyKey: string | symbol): Kind {
  if (Object.prototype.toString.call(method) === '[object AsyncGeneratorFunction]') return 'generator';
  const declared: unknown = Reflect.getMetadata('design:returntype', target, propertyKey);
  const returnsObservable =
    typeof declared === 'function' && (declared === Observable || declared.prototype instanceof Observable);
  return returnsObservable ? 'observable' : 'promise';
}

function wrapPromise(method: Method, call: PooledCall): Method {
  return async function (this: unknown, ...args: unknown[]) {
    const pool = call.find(this);
    return pool.use(() => {
      const result = method.apply(this, args);
      if (isObservable(result)) {
        throw new PoolConfigError(
          call.pool,
          '@UsePooled',
          `${call.where} returned an Observable but does not declare it; declare its return type as Observable<...> (with Observable imported as a value, not with import type) so the lease is held until the stream ends`,
        );
      }
      return result;
    }, call.useOptions(args));
  };
}

function wrapObservable(method: Method, call: PooledCall): Method {
  return function (this: unknown, ...args: unknown[]) {
    return new Observable<unknown>((subscriber) => {
      const abort = new AbortController();
      let scope: HeldScope | undefined;
      let inner: Subscription | undefined;
      let ended = false;
      const end = (failure?: { error: unknown }) => {
        if (ended || scope === undefined) return;
        ended = true;
        scope.end(failure).then(
          () => subscriber.complete(),
          (err: unknown) => subscriber.error(err),
        );
      };
      const start = async () => {
        scope = await holdScope(call.find(this), call.useOptions(args, abort.signal));
        if (subscriber.closed) return end();
        try {
          const source = scope.run(() => method.apply(this, args));
          if (!isObservable(source)) {
            throw new PoolConfigError(call.pool, '@UsePooled', `${call.where} declares an Observable but returned ${typeof source}`);
          }
          inner = scope.run(() =>
            source.subscribe({
              next: (value) => subscriber.next(value),
              error: (error: unknown) => end({ error }),
              complete: () => end(),
            }),
          );
        } catch (error) {
          end({ error });
        }
      };
      start().catch((err: unknown) => subscriber.error(err));
      return () => {
        abort.abort();
        inner?.unsubscribe();
        end();
      };
    });
  };
}

function wrapGenerator(method: Method, call: PooledCall): Method {
  return async function* (this: unknown, ...args: unknown[]) {
    const scope = await holdScope(call.find(this), call.useOptions(args));
    let failure: { error: unknown } | undefined;
    try {
      const it = scope.run(() => method.apply(this, args)) as AsyncGenerator<unknown, unknown, unknown>;
      let finished = false;
      try {
        let step = await scope.run(() => it.next());
        while (step.done !== true) {
          let input: unknown;
          try {
            input = yield step.value;
          } catch (err) {
            step = await scope.run(() => it.throw(err));
            continue;
          }
          step = await scope.run(() => it.next(input));
        }
        finished = true;
        return step.value;
      } finally {
        // Abandoned (the consumer called return() or broke out of for await): let the method's own finally blocks run.
        if (!finished) await scope.run(() => it.return(undefined));
      }
    } catch (error) {
      failure = { error };
      throw error;
    } finally {
      // With a failure, end() rejects with that same error, which is already on its way out.
      await scope.end(failure).catch(() => {});
    }
  };
}

/** Keeps the method's name and every metadata other decorators put on it (routes, SetMetadata). */
function copyIdentity(original: Method, wrapped: Method): void {
  Object.defineProperty(wrapped, 'name', { value: original.name, configurable: true });
  for (const key of Reflect.getOwnMetadataKeys(original)) {
    Reflect.defineMetadata(key, Reflect.getOwnMetadata(key, original), wrapped);
  }
}
