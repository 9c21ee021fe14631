import type pg from 'pg';
import { transactionControl } from './transaction-control.js';

type Callback = (err: Error | undefined, result?: unknown) => void;

/** What a checkout does when its holder gives it back: `failure` from `release(err)`, or undefined. */
export type CheckoutEnd = (failure: Error | undefined) => void;

/** How a checkout runs. */
export interface CheckoutPlan {
  /**
   * Inside a scope: the scope's connection was in a transaction when the unit went in (as the
   * server reported), so the unit's own transactions are savepoints.
   */
  readonly nests: boolean;
  /** Inside a scope: what the unit leaves open is rolled back before the next goes in. */
  readonly inScope: boolean;
  /** What the errors call the scope: "@UsePooled('db') on Ledger.transfer". */
  readonly scope: string;
  readonly pool: string;
  /** Whether the lease under it still holds the connection (inside a scope, the scope's: a unit its scope outlived is dead too). */
  readonly live: () => boolean;
  /** The face's `types` (pg.Pool's option): the type parsers of each statement that names none. */
  readonly types: pg.CustomTypesConfig | undefined;
  readonly end: CheckoutEnd;
}

let savepoints = 0;

const RELEASED = 'Release called on client which has already been released to the pool.';

/** Event methods whose listeners a holder adds: taken off the shared client when it gives it back. */
const ADDS = new Set<PropertyKey>(['on', 'once', 'addListener', 'prependListener', 'prependOnceListener']);

/**
 * One checkout of a pg client: the handle its holder gets (`handle`), which is the client in all
 * but three things. Its `release()` ends this checkout only, and refuses a second call as pg.Pool
 * does; once released, its `query()` refuses work instead of running it on the next holder's
 * connection; and the listeners it added leave with it. Inside a scope it is one unit of work:
 * its transactions nest as savepoints when the scope's connection is in one already, and what it
 * leaves open is rolled back before the next unit goes in.
 */
export class PgCheckout implements ProxyHandler<pg.Client> {
  readonly handle: pg.PoolClient;
  readonly #client: pg.Client;
  readonly #plan: CheckoutPlan;
  #released = false;
  /** The savepoint that stands for the unit's own transaction, while it is open. */
  #savepoint: string | undefined = undefined;
  /** Statements sent and not yet answered (counted inside a scope only). */
  #inflight = 0;
  #drained: (() => void) | undefined = undefined;
  /** Made on first use: most checkouts add no listener and call no method but query() and release(). */
  #listeners: [string | symbol, (...a: unknown[]) => void][] | undefined = undefined;
  #bound: Map<PropertyKey, unknown> | undefined = undefined;

  constructor(client: pg.Client, plan: CheckoutPlan) {
    this.#client = client;
    this.#plan = plan;
    // The checkout is its handle's handler: no closures made per checkout for the traps.
    this.handle = new Proxy(client, this) as pg.PoolClient;
  }

  /** The handle's `set` trap: on the client itself. */
  set(target: pg.Client, key: PropertyKey, value: unknown): boolean {
    return Reflect.set(target, key, value, target);
  }

  /** The handle's `get` trap: the checkout's own `release` and `query`, the rest the client's, bound to it. */
  get(target: pg.Client, key: PropertyKey): unknown {
    if (key === 'release') return this.#release;
    if (key === 'query') return this.#query;
    const value: unknown = Reflect.get(target, key, target);
    if (typeof value !== 'function') return value;
    const cache = (this.#bound ??= new Map());
    let bound = cache.get(key);
    if (bound === undefined) {
      const method = value as (...a: unknown[]) => unknown;
      bound = ADDS.has(key)
        ? (event: string | symbol, listener: (...a: unknown[]) => void) => {
            if (!this.#released) (this.#listeners ??= []).push([event, listener]);
            method.call(target, event, listener);
            return this.handle;
          }
        : (...a: unknown[]) => method.apply(target, a);
      cache.set(key, bound);
    }
    return bound;
  }

  /** pg's `release(err?)`: a second call throws, as pg.Pool's does. */
  readonly #release = (err?: Error | boolean): void => {
    if (this.#released) throw new Error(RELEASED);
    this.#released = true;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners !== undefined)
      for (const [event, listener] of listeners) this.#client.removeListener(event, listener);
    const failure =
      err === undefined || err === false ? undefined : err === true ? new Error('released with release(true)') : err;
    // Outside a scope, the pool's reset cleans it; a unit its scope outlived has nothing left to clean.
    if (!this.#plan.inScope || !this.#plan.live()) return this.#plan.end(failure);
    void this.#clean().then(
      (broken) => this.#plan.end(failure ?? broken),
      (broken: Error) => this.#plan.end(broken),
    );
  };

  /** `client.query(...)` through the checkout. */
  readonly #query = (...given: unknown[]): unknown => {
    const args = withTypes(given, this.#plan.types);
    if (this.#released)
      return refuse(args, new Error(`${RELEASED} This client was given back and runs no more queries.`));
    if (!this.#plan.live()) {
      const { pool, scope } = this.#plan;
      return refuse(
        args,
        new Error(`pool "${pool}": this client's scope (${scope}) has ended: it runs no more queries`),
      );
    }
    if (!this.#plan.inScope) return (this.#client.query as (...a: unknown[]) => unknown)(...args);
    return this.#inScope(args);
  };

  /** A statement of a unit of work inside a scope: counted, and nested when it controls the transaction. */
  #inScope(args: unknown[]): unknown {
    const last = args[args.length - 1];
    const callback = typeof last === 'function' ? (args.pop() as Callback) : undefined;
    const first = args[0];
    const text = typeof first === 'string' ? first : (first as { text?: unknown } | null)?.text;
    const submittable = typeof (first as { submit?: unknown } | null)?.submit === 'function';
    if (submittable)
      return (this.#client.query as (...a: unknown[]) => unknown)(...args, ...(callback ? [callback] : []));
    let sent: Promise<unknown>;
    if (typeof text === 'string' && mayControl(text) && !hasValues(first, args[1])) {
      const nested = this.#nest(text);
      if (nested instanceof Error) sent = Promise.reject(nested);
      else if (nested === undefined) sent = this.#send(args);
      else sent = nested;
    } else sent = this.#send(args);
    if (callback === undefined) return sent;
    sent.then(
      (result) => callback(undefined, result),
      (err: Error) => callback(err),
    );
    return undefined;
  }

  /** Sends a statement as given, counted until it is answered. */
  #send(args: unknown[]): Promise<unknown> {
    this.#inflight++;
    const done = () => {
      if (--this.#inflight === 0) this.#drained?.();
    };
    const sent = (this.#client.query as (...a: unknown[]) => Promise<unknown>)(...args);
    return sent.then(
      (result) => {
        done();
        return result;
      },
      (err: unknown) => {
        done();
        throw err;
      },
    );
  }

  /**
   * A statement of a unit of work inside a scope that begins or ends a transaction. In a unit
   * that went in while the scope's connection was in a transaction (as the server reported), its
   * BEGIN becomes a savepoint, and its COMMIT or ROLLBACK the release of it or a rollback to it;
   * what would end or change the scope's transaction itself is refused (an Error). Undefined:
   * sent as is (everything in a unit that went in outside a transaction: its own are real).
   */
  #nest(text: string): Promise<unknown> | Error | undefined {
    if (!this.#plan.nests) return undefined;
    const control = transactionControl(text);
    if (control === undefined) return undefined;
    const savepoint = this.#savepoint;
    if (control === 'refused') return this.#refusal(text, 'cannot nest');
    if (control === 'begin') {
      if (savepoint !== undefined) return this.#refusal(text, 'would begin a second transaction');
      const name = `nsp_unit_${++savepoints}`;
      this.#savepoint = name;
      return this.#send([`SAVEPOINT ${name}`]);
    }
    if (savepoint === undefined) return this.#refusal(text, 'would end the transaction');
    return this.#endSavepoint(savepoint, control === 'rollback');
  }

  /**
   * Ends the unit's savepoint: released, rolled back to first when `back`, or when the release
   * finds its transaction failed (a COMMIT of a failed transaction rolls it back, as PostgreSQL's
   * does). Forgotten once released, so a release that fails leaves it to the clean-up.
   */
  #endSavepoint(savepoint: string, back: boolean): Promise<unknown> {
    const forget = (result: unknown) => {
      if (this.#savepoint === savepoint) this.#savepoint = undefined;
      return result;
    };
    const release = () => this.#send([`RELEASE SAVEPOINT ${savepoint}`]).then(forget);
    const rollBack = () => this.#send([`ROLLBACK TO SAVEPOINT ${savepoint}`]).then(release);
    if (back) return rollBack();
    return release().catch((err: unknown) => {
      if ((err as { code?: unknown } | null)?.code === '25P02') return rollBack();
      throw err;
    });
  }

  #refusal(text: string, what: string): Error {
    const shown = text.length > 60 ? `${text.slice(0, 57)}...` : text;
    return new Error(
      `pool "${this.#plan.pool}": "${shown}" ${what} inside the transaction of ${this.#plan.scope}, which this unit of ` +
        'work runs in (its own transaction is a savepoint there): send one BEGIN and then COMMIT or ROLLBACK, each ' +
        "on its own and without modes (a savepoint keeps the outer transaction's); end the scope's transaction on " +
        "pool.current; or give this work its own connection (propagation: 'new')",
    );
  }

  /**
   * After the holder gave it back, inside a scope: once its statements are answered, what the
   * unit left open is rolled back, so the next unit starts where this one did: its savepoint, or
   * a transaction of its own begun outside the scope's. Resolves with an error when the
   * connection could not be cleaned.
   */
  async #clean(): Promise<Error | undefined> {
    if (this.#inflight > 0) await new Promise<void>((resolve) => (this.#drained = resolve));
    const client = this.#client;
    try {
      const savepoint = this.#savepoint;
      const status = client.getTransactionStatus();
      if (savepoint !== undefined && status !== 'I') {
        this.#savepoint = undefined;
        await client.query(`ROLLBACK TO SAVEPOINT ${savepoint}`);
        await client.query(`RELEASE SAVEPOINT ${savepoint}`);
      } else if (!this.#plan.nests && status !== 'I') await client.query('ROLLBACK');
      return undefined;
    } catch (err) {
      return err instanceof Error ? err : new Error(String(err));
    }
  }
}

/** The first words of statements that may begin or end a transaction; anything else, in one statement, cannot. */
const CONTROL_START = /^\s*(?:begin|start|commit|end|rollback|abort|prepare)\b/i;

/** Whether `text` may control the transaction: cheap, so a unit's plain statements are not parsed. */
function mayControl(text: string): boolean {
  return CONTROL_START.test(text) || text.includes(';') || text.includes('/*') || text.includes('--');
}

/** Whether a query comes with parameters (a transaction statement with some is sent as is: the server refuses it, as with pg). */
function hasValues(first: unknown, second: unknown): boolean {
  const values = Array.isArray(second) ? second : (first as { values?: unknown } | null)?.values;
  return Array.isArray(values) && values.length > 0;
}

/**
 * A query's arguments with the face's type parsers (pg.Pool's `types`, which pg gives each client
 * it makes), for a statement that names none of its own. A `Submittable` (a cursor, a stream) made
 * without types gets them on its result, where pg's client puts its own.
 */
export function withTypes(args: unknown[], types: pg.CustomTypesConfig | undefined): unknown[] {
  if (types === undefined) return args;
  const first = args[0];
  if (typeof first === 'string') return [{ text: first, types }, ...args.slice(1)];
  if (typeof first !== 'object' || first === null || 'types' in first) return args;
  if (typeof (first as { submit?: unknown }).submit === 'function') {
    const result = (first as { _result?: { _types?: unknown } })._result;
    if (result !== undefined && result !== null && result._types === undefined) result._types = types;
    return args;
  }
  return [{ ...first, types }, ...args.slice(1)];
}

/** pg's answer to a query on a client that runs none: the error, to the callback or as a rejection, on a later tick. */
function refuse(args: unknown[], err: Error): unknown {
  const last = args[args.length - 1];
  if (typeof last === 'function') {
    process.nextTick(() => (last as Callback)(err));
    return undefined;
  }
  return Promise.reject(err);
}

/** The transaction status the server reported, once the statements already sent are answered. */
export function settledStatus(client: pg.Client): 'I' | 'T' | 'E' | Promise<'I' | 'T' | 'E'> {
  if ((client as { readyForQuery?: boolean }).readyForQuery !== false) return client.getTransactionStatus() as 'I';
  return new Promise((resolve) => {
    const done = () => {
      client.removeListener('drain', done);
      client.removeListener('end', done);
      resolve(client.getTransactionStatus() as 'I');
    };
    client.on('drain', done);
    client.on('end', done);
  });
}
