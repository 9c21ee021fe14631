import { ConnectionFailedError, messageOf, PoolClosedError, type Timers } from '../common/index.js';
import type { Connector } from '../contracts/index.js';
import type { ResolvedOptions } from '../options/index.js';
import type { SharedConnection } from './shared-connection.js';

const isObject = (value: unknown): value is object => typeof value === 'object' || typeof value === 'function';

/** What the opener tells its pool, and needs of it. */
export interface OpenerHost<T> {
  readonly timers: Timers;
  /** The connection is open and ready. */
  opened(conn: SharedConnection<T>): void;
  /** The create or readiness check failed or timed out (the value, if any, is closed by the pool). */
  failed(conn: SharedConnection<T>, err: ConnectionFailedError): void;
  /** The pool closed while it opened. */
  abandoned(conn: SharedConnection<T>): void;
  /** Closes a value with the connector, bounded by closeTimeoutMs. */
  closeValue(value: T): Promise<void>;
}

/**
 * Opens connections: `create()`, then `ready()`, within `createTimeoutMs`. A value the pool
 * already holds or has closed is refused (a connector must open a new connection each time); a
 * connection that arrives after its create gave up (timed out, the pool closed) is closed at once,
 * never readied nor leaked. Each open reports opened, failed or abandoned, exactly once.
 */
export class ConnectionOpener<T> {
  /**
   * What creates resolved to, so a connector handing out one connection twice is caught: every
   * object ever (closed ones too), and other values (a numeric handle) while they are open.
   */
  readonly #seen = new WeakSet<object>();
  readonly #openValues = new Set<T>();
  /** Opens under way: close() waits for them. */
  readonly pending = new Set<Promise<void>>();

  constructor(
    readonly connector: Connector<T>,
    readonly options: ResolvedOptions,
    readonly host: OpenerHost<T>,
  ) {}

  /** A value was closed: a handle that is not an object may be handed out again. */
  closed(value: T): void {
    if (!isObject(value)) this.#openValues.delete(value);
  }

  /** Opens `conn`; settles when it is ready, or rejects with why it is not. */
  open(conn: SharedConnection<T>): Promise<void> {
    const o = this.options;
    let settled = false;
    let finish!: (err?: unknown) => void;
    const outcome = new Promise<void>((resolve, reject) => {
      finish = (err?: unknown) => {
        if (settled) return;
        settled = true;
        conn.abort = null;
        conn.abandon = null;
        this.host.timers.clear(timer);
        this.pending.delete(outcome);
        if (err === undefined) {
          this.host.opened(conn);
          resolve();
        } else if (err instanceof PoolClosedError) {
          this.host.abandoned(conn);
          reject(err);
        } else {
          const failure =
            err instanceof ConnectionFailedError
              ? err
              : new ConnectionFailedError(o.name, `create failed: ${messageOf(err)}`, err);
          this.host.failed(conn, failure);
          reject(failure);
        }
      };
    });
    this.pending.add(outcome);
    conn.abandon = () => {
      const closed = new PoolClosedError(o.name);
      conn.abort?.abort(closed);
      finish(closed);
    };
    const timer = this.host.timers.set(() => {
      const err = new ConnectionFailedError(
        o.name,
        `create + ready took longer than createTimeoutMs (${o.createTimeoutMs} ms)`,
      );
      conn.abort?.abort(err);
      finish(err);
    }, o.createTimeoutMs);

    let createEnded!: () => void;
    conn.createEnded = new Promise<void>((resolve) => (createEnded = resolve));
    const establish = async (): Promise<void> => {
      let value: T;
      try {
        value = await this.connector.create(conn.ctx);
      } catch (err) {
        createEnded();
        throw err;
      }
      if (value === undefined || value === null) {
        createEnded();
        if (settled) return;
        throw new ConnectionFailedError(
          o.name,
          `create() resolved to ${String(value)}; it must resolve to the connection`,
        );
      }
      if (isObject(value) ? this.#seen.has(value) : this.#openValues.has(value)) {
        // Never close it: it is another connection's, or closed already. Failing this create is all we may do.
        createEnded();
        if (settled) return;
        throw new ConnectionFailedError(
          o.name,
          'create() resolved to a connection the pool already holds or has closed; a connector must open a new connection on every create()',
        );
      }
      if (isObject(value)) this.#seen.add(value);
      if (settled) {
        // Timed out, or the pool closed meanwhile: a late connection is closed at once, never readied nor leaked.
        void this.host.closeValue(value).then(createEnded, createEnded);
        return;
      }
      createEnded(); // from here the value is the connection's: its own close ends its place
      conn.value = value;
      if (!isObject(value)) this.#openValues.add(value);
      conn.state = 'establishing';
      let ready: boolean | void = true;
      try {
        if (this.connector.ready) ready = await this.connector.ready(value, conn.ctx);
      } catch (err) {
        throw new ConnectionFailedError(o.name, `ready() failed: ${messageOf(err)}; the connection was closed`, err);
      }
      if (ready === false) throw new ConnectionFailedError(o.name, 'ready() returned false; the connection was closed');
      finish();
    };
    establish().catch((err: unknown) => finish(err));
    return outcome;
  }
}
