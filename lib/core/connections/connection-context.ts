import type { CreateContext, RetireOptions } from '../contracts/index.js';
import type { SharedConnection } from './shared-connection.js';

/** @internal The pool's side of a connection's context. */
export const kFromConnector = Symbol('fromConnector');

/** @internal */
export interface ContextOwner<T> {
  readonly name: string;
  [kFromConnector](conn: SharedConnection<T>, change: { retire: unknown; graceful: boolean } | { limit: number }): void;
}

/** Handed out once the connection is open: its create can no longer be aborted. */
const OPENED = new AbortController().signal;

/** The {@link CreateContext} of one connection. Two fields, so idle connections stay cheap. */
export class ConnectionContext<T> implements CreateContext {
  readonly #owner: ContextOwner<T>;
  readonly #conn: SharedConnection<T>;

  constructor(owner: ContextOwner<T>, conn: SharedConnection<T>) {
    this.#owner = owner;
    this.#conn = conn;
  }

  get pool(): string {
    return this.#owner.name;
  }

  get signal(): AbortSignal {
    return this.#conn.abort?.signal ?? OPENED;
  }

  retire(reason?: unknown, options?: RetireOptions): void {
    this.#owner[kFromConnector](this.#conn, { retire: reason, graceful: options?.graceful === true });
  }

  setClientLimit(limit: number): void {
    this.#owner[kFromConnector](this.#conn, { limit });
  }
}
