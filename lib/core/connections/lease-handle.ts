// What a caller holds of a connection, when its connector lends handles: the connection in every
// respect while its lease holds, and nothing once it ends. A caller that kept it past its use()
// (a callback fired late, a task left running, a value stored on `this`) would otherwise send its
// work on a connection that is another caller's by then.
import { LeaseEndedError } from '../common/index.js';
import type { HandleLending } from '../contracts/index.js';

/** Methods that add a listener: what a holder added leaves with its lease. */
const ADDS = new Set<PropertyKey>(['on', 'once', 'addListener', 'prependListener', 'prependOnceListener']);

/** Methods that take listeners off: through a handle, only those it added itself (never the pool's own). */
const REMOVES = new Set<PropertyKey>(['off', 'removeListener', 'removeAllListeners']);

/** Methods that only read, which a handle whose lease ended may still call. */
const HARMLESS = new Set<PropertyKey>([
  'listenerCount',
  'listeners',
  'rawListeners',
  'eventNames',
  'getMaxListeners',
  'toString',
  'toJSON',
  'valueOf',
  'toLocaleString',
  'hasOwnProperty',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'constructor',
]);

type Method = (...args: unknown[]) => unknown;

/**
 * How a handle treats a method, by its name: bound to the connection, adding a listener (ADDS),
 * taking listeners off (REMOVES), or making something that sends work later (`sendsLater`).
 */
type Kind = 'bound' | 'adds' | 'removes' | 'later';

/** What a handle knows of one method name, worked out once per connection. */
interface Entry {
  readonly kind: Kind;
  /** A handle whose lease ended may still call it (HARMLESS). */
  readonly harmless: boolean;
  /** For 'later': the methods of its result that send. */
  readonly sends: readonly string[];
  /** For 'bound': why the lending refuses it to a holder, if it does. */
  readonly refused: string | undefined;
  /** For 'bound': the method last read under this name, and it bound to the connection. */
  method: Method | undefined;
  bound: Method | undefined;
}

/**
 * @internal What the handles of one connection share: the pool's name, how they refuse, and one
 * entry per method name read through them, so a read costs one lookup. A connection's methods are
 * bound to it on first use (a handle makes no closure per call); an entry keeps the method it
 * binds, so a method the connection replaces later is bound again.
 */
export class Lender {
  readonly #entries = new Map<PropertyKey, Entry>();

  constructor(
    readonly pool: string,
    readonly lending: HandleLending,
  ) {}

  /** The entry of the method name `key`. */
  entry(key: PropertyKey): Entry {
    let entry = this.#entries.get(key);
    if (entry === undefined) this.#entries.set(key, (entry = this.#entryOf(key)));
    return entry;
  }

  #entryOf(key: PropertyKey): Entry {
    const name = typeof key === 'string' ? key : undefined;
    const sends = name === undefined ? undefined : this.lending.sendsLater?.(name);
    const kind = ADDS.has(key) ? 'adds' : REMOVES.has(key) ? 'removes' : sends ? 'later' : 'bound';
    const refused = name === undefined ? undefined : this.lending.refuses?.(name);
    return { kind, harmless: HARMLESS.has(key), sends: sends ?? [], refused, method: undefined, bound: undefined };
  }

  /** `method`, read as `key` of `target`, bound to `target` (or refusing, as the lending says). */
  bind(entry: Entry, target: object, key: PropertyKey, method: Method): Method {
    const why = entry.refused;
    const bound: Method =
      why === undefined
        ? (method.bind(target) as Method)
        : () => {
            throw new Error(`pool "${this.pool}": ${String(key)}() is not for a holder: ${why}`);
          };
    entry.method = method;
    entry.bound = bound;
    return bound;
  }
}

/** What a handle needs of its lease. */
export interface HandledLease {
  /** False once the lease was given back or its connection closed. */
  readonly live: boolean;
}

/**
 * @internal One lease's handle on a connection (its `proxy`): reads and writes reach the
 * connection, and a method read from it runs on the connection itself (not on the proxy, so a
 * client's private fields and its own identity checks hold), as long as the lease is live. Once it
 * ended, a method read from it runs nothing and fails with {@link LeaseEndedError} (through its
 * callback, as a rejected promise when the lending says it returns one, else thrown), writing a
 * property throws it, and the listeners the holder added are taken off the connection. A method
 * read while the lease held and called after it ended is not caught (nothing could be, short of a
 * check on every call).
 */
export class LeaseHandle<T extends object> implements ProxyHandler<T> {
  readonly proxy: T;
  readonly #lease: HandledLease;
  readonly #lender: Lender;
  /** Made on first use: most holders add no listener. */
  #listeners: [string | symbol, Method][] | undefined = undefined;

  constructor(connection: T, lease: HandledLease, lender: Lender) {
    this.#lease = lease;
    this.#lender = lender;
    // The handle is its proxy's handler: no closures made per lease for the traps.
    this.proxy = new Proxy(connection, this);
  }

  get(target: T, key: PropertyKey): unknown {
    const value: unknown = Reflect.get(target, key, target);
    if (typeof value !== 'function') return value;
    const entry = this.#lender.entry(key);
    if (!this.#lease.live && !entry.harmless) return this.#refusal(key);
    switch (entry.kind) {
      case 'bound':
        return entry.method === value ? entry.bound : this.#lender.bind(entry, target, key, value as Method);
      case 'adds':
        return this.#adding(target, value as Method);
      case 'removes':
        return this.#removing(target, key);
      case 'later':
        return this.#guarding(target, value as Method, entry.sends);
    }
  }

  set(target: T, key: PropertyKey, value: unknown): boolean {
    this.#mayChange(`a write of ${String(key)}`);
    return Reflect.set(target, key, value, target);
  }

  defineProperty(target: T, key: PropertyKey, descriptor: PropertyDescriptor): boolean {
    this.#mayChange(`a definition of ${String(key)}`);
    return Reflect.defineProperty(target, key, descriptor);
  }

  deleteProperty(target: T, key: PropertyKey): boolean {
    this.#mayChange(`a delete of ${String(key)}`);
    return Reflect.deleteProperty(target, key);
  }

  setPrototypeOf(target: T, prototype: object | null): boolean {
    this.#mayChange('a change of its prototype');
    return Reflect.setPrototypeOf(target, prototype);
  }

  /** A change of the connection object itself: refused once the lease has ended. */
  #mayChange(operation: string): void {
    if (!this.#lease.live) throw new LeaseEndedError(this.#lender.pool, operation);
  }

  /** The lease ended: what its holder listens to leaves the connection. */
  end(target: T): void {
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners === undefined) return;
    const off = (target as { removeListener?: (event: string | symbol, listener: Method) => unknown }).removeListener;
    if (typeof off === 'function') for (const [event, listener] of listeners) off.call(target, event, listener);
  }

  /** `on()` and its kin, the listener kept to be taken off when the lease ends. */
  #adding(target: T, method: Method): Method {
    return (event: unknown, listener: unknown, ...rest: unknown[]) => {
      if (this.#lease.live && typeof listener === 'function')
        (this.#listeners ??= []).push([event as string | symbol, listener as Method]);
      method.call(target, event, listener, ...rest);
      return this.proxy;
    };
  }

  /**
   * `off()` and its kin: only the listeners this handle added come off (the pool's own, which keep
   * a broken connection from crashing the process, and other holders' stay).
   */
  #removing(target: T, key: PropertyKey): Method {
    const all = key === 'removeAllListeners';
    return (event?: unknown, listener?: unknown) => {
      const own = this.#listeners ?? [];
      // Last added first, as EventEmitter takes a listener added twice off.
      for (let i = own.length - 1; i >= 0; i--) {
        const [e, l] = own[i]!;
        if (all ? event !== undefined && e !== event : e !== event || l !== listener) continue;
        own.splice(i, 1);
        (target as { removeListener(e: string | symbol, l: Method): unknown }).removeListener(e, l);
        if (!all) break;
      }
      return this.proxy;
    };
  }

  /** A method whose result sends its work later (`pipeline()`): that sending dies with the lease too. */
  #guarding(target: T, method: Method, sends: readonly string[]): Method {
    return (...args: unknown[]) => {
      const result = method.apply(target, args) as Record<string, unknown>;
      if (typeof result !== 'object' || result === null) return result;
      for (const name of sends) {
        const send = result[name];
        if (typeof send !== 'function') continue;
        result[name] = (...given: unknown[]) => {
          if (this.#lease.live) return (send as Method).apply(result, given);
          const error = new LeaseEndedError(this.#lender.pool, `${name}() of what the handle made`);
          const callback = given.at(-1);
          if (typeof callback === 'function') return void process.nextTick(callback, error);
          return Promise.reject(error);
        };
      }
      return result;
    };
  }

  /** The method `key` of a handle whose lease ended: it runs nothing, and fails. */
  #refusal(key: PropertyKey): Method {
    const name = String(key);
    const { pool, lending } = this.#lender;
    const promises = lending.returnsPromise?.(name) === true;
    const callsBack = lending.callsBack?.(name) === true;
    return (...args: unknown[]) => {
      const error = new LeaseEndedError(pool, `${name}()`);
      const callback = args.at(-1);
      if (callsBack && typeof callback === 'function') {
        process.nextTick(callback, error);
        return undefined;
      }
      if (promises) return Promise.reject(error);
      throw error;
    };
  }
}
