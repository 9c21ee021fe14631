import type { ConnectionState, CreateContext, RetireReason } from '../contracts/index.js';
import type { Lender } from './lease-handle.js';

/**
 * One pooled connection and the bookkeeping the pool keeps on it. Internal: the pool owns every
 * field; callers only ever see `value` through a lease.
 */
export class SharedConnection<T> {
  state: ConnectionState = 'opening';
  value: T | undefined = undefined;
  /** Callers holding this connection now. */
  clients = 0;
  /** Most callers at once: the pool's clientLimit, or less if the connector lowered it. */
  limit: number;
  uses = 0;
  /** When its create began; once it is ready, when it opened. */
  createdAt = 0;
  /** Jittered end of life; `Infinity` when there is no lifetime. */
  expiresAt = Infinity;
  /** When the last client left (or when it opened); `Infinity` until the idle stamp of this turn (see ConnectionSet.idled). */
  idleSince = 0;
  /** Opened or validated since its last client left (with validateAfterIdleMs 0 it needs no validation before its next one). */
  checked = true;
  /** A validate() call is running; the connection is out of the index meanwhile. */
  validating = false;
  /** Ends a running validation at once (the pool is closing); null when none runs. */
  endValidation: (() => void) | null = null;
  /** Ends a running reset at once (the pool is closing); null when none runs. */
  endReset: (() => void) | null = null;
  /** What the handles its leases lend share; made on first use. */
  lender: Lender | undefined = undefined;
  /** Its replacement is opening; it keeps serving until that one is ready. */
  rotating = false;
  /** The connection this one replaces (rotation). */
  replaces: SharedConnection<T> | null = null;
  /** Why it was retired before it was ready (ctx.retire(), refresh()); it retires as soon as it is. */
  retireOnReady: { readonly reason: RetireReason; readonly detail: string } | undefined = undefined;

  // Links of the index bucket this connection sits in (-1: in no bucket).
  bucket = -1;
  prev: SharedConnection<T> | null = null;
  next: SharedConnection<T> | null = null;

  /** Aborts the create; dropped once the connection is open. */
  abort: AbortController | null = new AbortController();
  /** Gives up on the create at once (the pool is closing): a late arrival is closed. Null once settled. */
  abandon: (() => void) | null = null;
  /**
   * Settles once the connector's `create()` has ended, and anything it resolved to after the pool
   * gave up on it (a timeout, a close) is closed: until then the server may see the connection,
   * so a shared budget still counts its place.
   */
  createEnded: Promise<void> | undefined = undefined;
  ctx!: CreateContext;

  constructor(
    readonly id: number,
    limit: number,
  ) {
    this.limit = limit;
  }
}
