/** What the pool passes to {@link Connector.create}. */
export interface CreateContext {
  /** Aborted when the create times out or the pool closes. */
  readonly signal: AbortSignal;
  /** The pool's name. */
  readonly pool: string;
  /**
   * Tells the pool this connection broke (a socket `'error'`, a GOAWAY): it takes no new
   * clients and closes once its last client leaves. Safe to call at any time, any number of times;
   * the first call's reason is the one kept. The reason becomes the pool's `lastError` (shown by
   * the health indicator and the dashboard) unless `{ graceful: true }`: the peer closes it in
   * order (an HTTP/2 GOAWAY with NO_ERROR, a server's planned restart), which is no error.
   */
  retire(reason?: unknown, options?: RetireOptions): void;
  /**
   * Lowers (or restores) how many callers may share this connection, e.g. an HTTP/2 peer's
   * `maxConcurrentStreams`. Capped at the pool's `clientLimit`; at least 1.
   */
  setClientLimit(limit: number): void;
}

/** How a connector retires a connection ({@link CreateContext.retire}). */
export interface RetireOptions {
  /** The peer closes it in order: no error, so the pool's `lastError` stays as it was. Default false. */
  readonly graceful?: boolean;
}

/** What the pool passes to {@link Connector.reset}. */
export interface ResetContext {
  /** Whether the caller's code threw (a `use()` or `@UsePooled` call that ended in an error). */
  readonly failed: boolean;
}

/** How the handles of {@link Connector.lendsHandles} refuse work once their lease has ended. */
export interface HandleLending {
  /**
   * Whether the connection's method `name` answers with a promise: on a handle whose lease has
   * ended, it then returns a promise rejected with `LeaseEndedError`, where another method throws
   * it. Default: no method does.
   */
  readonly returnsPromise?: (name: string) => boolean;
  /**
   * Whether the method `name` takes a Node-style callback as its last argument (pg's `query`,
   * ioredis's commands): refused, a call given one is told the error through it. Default: none.
   */
  readonly callsBack?: (name: string) => boolean;
  /**
   * Why a holder may not call the method `name` through its handle at all, even while its lease
   * holds (the shared Redis client's `disconnect()`, which would cut every other caller off), or
   * undefined: such a call throws an Error with that reason. Default: every method may be called.
   */
  readonly refuses?: (name: string) => string | undefined;
  /**
   * For a method `name` whose result holds work sent later (ioredis's `pipeline()` and `multi()`,
   * sent by `exec()`): the result's methods that send it. Called after the lease ended, those
   * fail with `LeaseEndedError` (a rejected promise, or through a callback) and send nothing.
   */
  readonly sendsLater?: (name: string) => readonly string[] | undefined;
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
  /**
   * Whether each lease lends its holder a handle of its own on the connection (`lease.connection`,
   * `use()`'s argument, `pool.current`), rather than the connection itself: the connection in every
   * respect while the lease holds; once it has ended, a method read from it throws
   * `LeaseEndedError` and runs nothing, and the listeners its holder added leave the connection.
   * A caller that kept the connection past its call then cannot touch the next holder's work. The
   * ready-made connectors set it; spread one with `lendsHandles: false` for the connection itself
   * (a library that keys a WeakMap by it). `{ returnsPromise }` says which methods answer with a
   * promise: refused, those reject rather than throw. Default false.
   */
  readonly lendsHandles?: boolean | HandleLending;
  /** Opens a connection. Must resolve to a value (not `undefined`/`null`). */
  create(ctx: CreateContext): Promise<T>;
  /** Readiness round trip before first use. `false` or a throw: the connection is closed, never handed out. */
  ready?(conn: T, ctx: CreateContext): Promise<boolean | void>;
  /** Closes a connection. Errors are logged, never thrown at callers. */
  close?(conn: T): Promise<void> | void;
  /** Liveness check before handing out a connection idle longer than `validateAfterIdleMs`. */
  validate?(conn: T): boolean | Promise<boolean>;
  /**
   * Makes an exclusive connection clean for its next caller, when its caller gives it back: roll
   * back a transaction left open, clear session state. Called before anyone else gets the
   * connection, and only in a pool whose `clientLimit` is 1 (a shared connection carries no
   * caller's state: the pool refuses a `reset` with `clientLimit` above 1). Answer synchronously
   * when the client knows it is clean (pg's `getTransactionStatus()` is `'I'`): then the
   * connection goes straight to the next caller, with no round trip and no extra turn. A promise
   * keeps it out of service until it settles, within `resetTimeoutMs`. `false`, a throw, a
   * rejection or the timeout retire the connection: it is never handed out again.
   */
  reset?(conn: T, ctx: ResetContext): boolean | void | Promise<boolean | void>;
  /** Whether an error thrown by user code means the connection is broken (retire it, maybe retry). */
  isFatal?(err: unknown): boolean;
  /**
   * Whether a create's failure is one retrying cannot mend (the database does not exist, the
   * credentials were refused): the breaker opens at once (with `blockingPeriod`, the default), so
   * callers fail now with it, where a transient failure is retried within their deadlines.
   */
  isPermanent?(err: unknown): boolean;
}
