/** What the pool passes to {@link Connector.create}. */
export interface CreateContext {
  /** Aborted when the create times out or the pool closes. */
  readonly signal: AbortSignal;
  /** The pool's name. */
  readonly pool: string;
  /**
   * Tells the pool this connection broke (a socket `'error'`, a GOAWAY): it takes no new
   * clients and closes once its last client leaves. Safe to call at any time, any number of times.
   */
  retire(reason?: unknown): void;
  /**
   * Lowers (or restores) how many callers may share this connection, e.g. an HTTP/2 peer's
   * `maxConcurrentStreams`. Capped at the pool's `clientLimit`; at least 1.
   */
  setClientLimit(limit: number): void;
}

/** How a pool opens, checks and closes connections of type `T`. */
export interface Connector<T> {
  /**
   * How many callers one connection may serve at once, declared by whoever knows the client: 1
   * for a database client (a transaction is state of its connection), the stream limit for
   * HTTP/2, many for an SDK client documented as safe to share. The pool's `clientLimit` option
   * overrides it. Undeclared: 1, so no connection is shared unless someone decided it may be.
   */
  readonly clientLimit?: number;
  /** Opens a connection. Must resolve to a value (not `undefined`/`null`). */
  create(ctx: CreateContext): Promise<T>;
  /** Readiness round trip before first use. `false` or a throw: the connection is closed, never handed out. */
  ready?(conn: T, ctx: CreateContext): Promise<boolean | void>;
  /** Closes a connection. Errors are logged, never thrown at callers. */
  close?(conn: T): Promise<void> | void;
  /** Liveness check before handing out a connection idle longer than `validateAfterIdleMs`. */
  validate?(conn: T): boolean | Promise<boolean>;
  /** Whether an error thrown by user code means the connection is broken (retire it, maybe retry). */
  isFatal?(err: unknown): boolean;
}
