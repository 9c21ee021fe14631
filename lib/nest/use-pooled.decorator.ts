import { isObservable, Observable, type Subscription } from 'rxjs';
import {
  checkedOnce,
  keysOf,
  optionError,
  type OptionScope,
  type PoolConfigError,
  type Rule,
  shown,
  unknownKey,
  violation,
} from '../core/index.js';
import { holdScope, keepScope, type HeldScope } from './held-scope.js';
import { declarePooledCall, PooledCall, type UsePooledOptions } from './pooled-call.js';
import { pooledConnectionAt } from './pooled-connection.decorator.js';
import { poolNameOf, type PoolName } from './tokens.js';

export type { UsePooledOptions } from './pooled-call.js';

type Method = (this: unknown, ...args: unknown[]) => unknown;
/**
 * `promise`: declared to return a Promise (design metadata), the fast path. `observable`: declared
 * to return an Observable. `generator`: an async generator function. `any`: nothing declared (no
 * `emitDecoratorMetadata`, as with esbuild or vitest), so the result decides at run time.
 */
type Kind = 'promise' | 'observable' | 'generator' | 'any';

/** `key` picks the admission key from the method's arguments, or opts the method out of keys. */
const keyRule: Rule = {
  says: "a function of the method's arguments, or false for calls without a key",
  ok: (v) => typeof v === 'function' || v === false,
};

/** `class` names the priority class of the method's calls, or picks it from the arguments. */
const classRule: Rule = {
  says: "a class name (a non-empty string), or a function of the method's arguments",
  ok: (v) => typeof v === 'function' || (typeof v === 'string' && v.length > 0),
};

const DECORATOR_KEYS = keysOf<UsePooledOptions>({
  timeoutMs: true,
  retry: true,
  key: true,
  class: true,
  onRefused: true,
  propagation: true,
});

/**
 * Runs the method with a connection of the pool `name` checked out: `pool.current` reads it
 * inside, and it is checked in whatever happens. Async methods hold it until they settle,
 * methods returning an `Observable` until it completes, errors or is unsubscribed, async
 * generators until the iteration ends or is abandoned.
 *
 * The pool is the provider of `getPoolToken(name)` in the application that made the instance, so
 * `overrideProvider(getPoolToken(name))` in a test reaches decorated methods too. It works in
 * controllers and providers, request-scoped ones included, and outside HTTP (cron jobs, queue
 * consumers); an object Nest did not make gets a `PoolNotFoundError` saying so.
 */
export function UsePooled(pool: PoolName, options?: Omit<UsePooledOptions, 'key'> & { key?: false }): MethodDecorator;
/** With a `key` function: the decorated method must take the arguments it reads (a checked decorator, not a plain `MethodDecorator`). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- as UsePooledOptions: unannotated key parameters are the method's arguments as they come
export function UsePooled<Args extends unknown[] = any[]>(
  pool: PoolName,
  options: UsePooledOptions<Args>,
): PooledMethodDecorator<Args>;
export function UsePooled(pool: PoolName, options: UsePooledOptions = {}): MethodDecorator {
  const name = poolNameOf(pool);
  if (typeof name !== 'string' || name.length === 0) {
    throw optionError(
      { subject: 'decorator', name: `@UsePooled(${JSON.stringify(pool) ?? String(pool)})` },
      'the name',
      'must be a non-empty string naming a pool, or a definePool() ref',
    );
  }
  if (typeof options !== 'object' || options === null) {
    throw optionError(
      { subject: 'decorator', name: `@UsePooled('${name}')` },
      'options',
      `must be an object, got ${shown(options)}`,
    );
  }

  return (target, propertyKey, descriptor) => {
    const owner = typeof target === 'function' ? target.name : target.constructor.name;
    const where = `${owner}.${String(propertyKey)}`;
    // Errors name the method and its options as written: "@UsePooled('db') on Catalog.find: timeoutMs ...".
    const scope: OptionScope = { subject: 'decorator', name: `@UsePooled('${name}') on ${where}` };
    const unknown = unknownKey(scope, options, DECORATOR_KEYS, "@UsePooled's options");
    if (unknown !== undefined) throw unknown;
    const fixed = checkedOnce(
      name,
      {
        timeoutMs: options.timeoutMs,
        retry: options.retry,
        propagation: options.propagation,
        key: options.key === false ? null : undefined,
        class: typeof options.class === 'string' ? options.class : undefined,
      },
      (call) => (call === 'retry' ? { ...scope, path: 'retry.' } : scope),
    );
    const badKey = violation(scope, 'key', options.key, keyRule) ?? violation(scope, 'class', options.class, classRule);
    if (badKey !== undefined) throw badKey;
    const original = descriptor.value as unknown;
    if (typeof original !== 'function') {
      throw optionError(
        { subject: 'decorator', name: `@UsePooled('${name}')` },
        where,
        'is not a method; @UsePooled decorates methods only',
      );
    }
    const connectionAt = pooledConnectionAt(target, propertyKey);
    if (options.propagation === 'none' && connectionAt === undefined) {
      throw optionError(
        scope,
        'propagation',
        "'none' leaves the method no pool.current; mark the parameter that takes the connection with @PooledConnection()",
      );
    }
    const kind = kindOf(original as Method, target, propertyKey);
    if ((kind === 'observable' || kind === 'generator') && options.retry !== undefined)
      throw noRetryOnStreams(name, where, 'it returns a stream');
    checkOnRefused(scope, options.onRefused, target, kind);
    const call = new PooledCall(name, where, options, fixed, connectionAt);
    declarePooledCall(target, call);
    const wrapped = { promise: wrapPromise, observable: wrapObservable, generator: wrapGenerator, any: wrapAny }[kind](
      original as Method,
      call,
    );
    copyIdentity(original as Method, wrapped);
    (descriptor as TypedPropertyDescriptor<unknown>).value = wrapped;
    return descriptor;
  };
}

/**
 * A method decorator for methods whose arguments `key` can read: a `key` annotated `(tenant:
 * string)` on a method whose first parameter is a number does not compile.
 */
export type PooledMethodDecorator<Args extends unknown[]> = <M>(
  target: object,
  propertyKey: string | symbol,
  descriptor: TypedPropertyDescriptor<M> & KeyReads<M, Args>,
) => TypedPropertyDescriptor<M> | void;

/** Nothing when the method's parameters begin with what `key` reads; otherwise a type no descriptor has, which names the problem. */
type KeyReads<M, Args extends unknown[]> = M extends (...params: infer P) => unknown
  ? P extends [...Args, ...unknown[]]
    ? unknown
    : { readonly "@UsePooled's key() reads parameters the method does not take": Args }
  : unknown;

function kindOf(method: Method, target: object, propertyKey: string | symbol): Kind {
  if (Object.prototype.toString.call(method) === '[object AsyncGeneratorFunction]') return 'generator';
  const declared: unknown = Reflect.getMetadata?.('design:returntype', target, propertyKey);
  if (declared === Promise) return 'promise';
  const returnsObservable =
    typeof declared === 'function' && (declared === Observable || declared.prototype instanceof Observable);
  return returnsObservable ? 'observable' : 'any';
}

/**
 * Declared to return a Promise: the method's promise is the lease's. No wrapper promise of its
 * own, and no closure per call: one body, called by the pool on the instance with the arguments.
 */
function wrapPromise(method: Method, call: PooledCall): Method {
  const body = (conn: unknown, self: unknown, args: unknown[]) => {
    const result = callWith(method, self, call.argsWith(args, conn));
    if (!(result instanceof Promise) && isObservable(result)) {
      throw call.error('the method', 'declares a Promise but returned an Observable');
    }
    return result;
  };
  // What errors about the scope call it (a unit of work that waited too long names its method).
  Object.defineProperty(body, 'scopeName', { value: `@UsePooled('${call.pool}') on ${call.where}` });
  return function (this: unknown, ...args: unknown[]) {
    return call.run(this, args, body);
  };
}

/**
 * `method.apply(self, args)`, with the usual argument counts spelled out: a plain call lets V8
 * inline the method into its body, which `apply()` does not.
 */
function callWith(method: Method, self: unknown, args: unknown[]): unknown {
  switch (args.length) {
    case 0:
      return method.call(self);
    case 1:
      return method.call(self, args[0]);
    case 2:
      return method.call(self, args[0], args[1]);
    case 3:
      return method.call(self, args[0], args[1], args[2]);
    default:
      return method.apply(self, args);
  }
}

/**
 * Nothing declared: a promise (or a value) is held until it settles, as above; an Observable is
 * held until it ends. The caller then gets a promise of the stream (Nest's router and `await`
 * take it), and the lease stays checked out from the call until the stream ends, so subscribe to
 * it. Declare the return type to get the Observable itself, with its lease taken on subscribe.
 */
function wrapAny(method: Method, call: PooledCall): Method {
  return function (this: unknown, ...args: unknown[]) {
    return new Promise((resolve, reject) => {
      let streaming = false;
      const used: Promise<unknown> = call.run(this, args, (conn) => {
        const result = method.apply(this, call.argsWith(args, conn));
        if (!isObservable(result)) return result;
        if (call.options.retry !== undefined)
          throw noRetryOnStreams(call.pool, call.where, 'it returned an Observable');
        streaming = true;
        const { scope, body } = keepScope(() => used, conn);
        resolve(streamWithin(call, args, this, () => result, scope));
        return body;
      });
      used.then(
        (value) => streaming || resolve(value),
        (error: unknown) => streaming || reject(error),
      );
    });
  };
}

/** Declared to return an Observable: each subscription takes its own lease and runs the method in it. */
function wrapObservable(method: Method, call: PooledCall): Method {
  return function (this: unknown, ...args: unknown[]) {
    const source = (scope: HeldScope) => {
      const made = scope.run(() => method.apply(this, call.argsWith(args, scope.connection)));
      if (!isObservable(made)) throw call.error('the method', `declares an Observable but returned ${shown(made)}`);
      return made;
    };
    return streamWithin(call, args, this, source);
  };
}

/**
 * An Observable that holds a lease per subscription until the stream completes, errors or is
 * unsubscribed. The first subscription may take `held`, a scope the stream was made in; any
 * other takes its own lease from the pool of `self`.
 */
function streamWithin(
  call: PooledCall,
  args: unknown[],
  self: unknown,
  source: (scope: HeldScope) => Observable<unknown>,
  held?: HeldScope,
): Observable<unknown> {
  let unused = held;
  return new Observable<unknown>((subscriber) => {
    const abort = new AbortController();
    const given = unused;
    unused = undefined;
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
      scope = given ?? (await holdScope(call.poolOf(self), call.useOptions(args, abort.signal)));
      if (subscriber.closed) return end();
      try {
        const stream = source(scope);
        inner = scope.run(() =>
          stream.subscribe({
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
}

/** `onRefused`: a function, or the name of a method of the class; never on a method that streams. */
function checkOnRefused(scope: OptionScope, onRefused: unknown, target: object, kind: Kind): void {
  if (onRefused === undefined) return;
  if (typeof onRefused === 'string') {
    if (typeof (target as Record<string, unknown>)[onRefused] !== 'function')
      throw optionError(scope, 'onRefused', `names no method of the class: ${shown(onRefused)}`);
  } else if (typeof onRefused !== 'function') {
    throw optionError(
      scope,
      'onRefused',
      `must be the name of a method of the class, or a function (error, ...args), got ${shown(onRefused)}`,
    );
  }
  if (kind === 'observable' || kind === 'generator')
    throw optionError(scope, 'onRefused', 'is only for methods that return a promise: this one streams');
}

/** `retry` on a method that streams: refused, since a stream may already have emitted. */
function noRetryOnStreams(pool: string, where: string, why: string): PoolConfigError {
  return optionError(
    { subject: 'decorator', name: `@UsePooled('${pool}')` },
    'retry',
    `cannot apply to ${where}: ${why}, which cannot be re-run once it has emitted`,
  );
}

function wrapGenerator(method: Method, call: PooledCall): Method {
  return async function* (this: unknown, ...args: unknown[]) {
    const scope = await holdScope(call.poolOf(this), call.useOptions(args));
    let failure: { error: unknown } | undefined;
    try {
      const it = scope.run(() => method.apply(this, call.argsWith(args, scope.connection))) as AsyncGenerator<
        unknown,
        unknown,
        unknown
      >;
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
