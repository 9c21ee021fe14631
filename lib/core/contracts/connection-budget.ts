/**
 * @internal A budget of connections several pools share (a pool group's). A connection counts
 * from the moment its create begins until its close has finished, rotations and draining
 * connections included: what the server sees. A create the pool gave up on (timed out, the pool
 * closed: a member forgotten) counts until the connector's create has ended and what it made late
 * is closed.
 */
export interface ConnectionBudget {
  /** The name of the shared budget behind it, when it has one (a FleetBudget's, or its group's): what stats() name. */
  name?(): string | undefined;
  /** Whether `member` may begin one more connection now. */
  mayOpen(member: BudgetMember): boolean;
  /** `member` began a connection. */
  began(member: BudgetMember): void;
  /** A connection of `member` is gone: its close finished, or its create failed or was given up. */
  ended(member: BudgetMember): void;
  /** A create of `member` is ready: its smoothed connect time (`connectMs`) changed. */
  connected(member: BudgetMember): void;
  /** `member` has callers its connections cannot serve and may not open: the budget may free a connection for it. */
  starved(member: BudgetMember): void;
  /**
   * The last client is leaving a ready connection of `member`, which it has held `heldMs`:
   * whether to retire it instead of keeping it (for the member's own next caller, or idle), so
   * another member can have its place.
   */
  yields(member: BudgetMember, heldMs: number): boolean;
  /**
   * `member` may have become quiet: its last caller left, or its last waiter did, so a group may
   * now forget it for a new key. Called synchronously from the member's hot path: look later.
   */
  quiet(member: BudgetMember): void;
  /** Whether a pool on the budget waits for a place now (one it asked for has not come yet). */
  asking?(): boolean;
  /** A pool on the budget was made (a budget that outlives its pools counts them). */
  attached?(member: BudgetMember): void;
  /** That pool has closed: its connections are gone. */
  detached?(member: BudgetMember): void;
}

/** @internal What a budget may ask of a member pool. */
export interface BudgetMember {
  /** Opens what the member's queue needs, if the budget now lets it. */
  demand(): void;
}

/** @internal The option through which a pool group hands its budget to a member pool. */
export const kBudget = Symbol('nestjs-shared-pool.budget');

/**
 * A budget of connections a pool shares beyond its own `maxSize`, given as its `budget` option: a
 * `FleetBudget` (`nestjs-shared-pool/groups`), which every instance of a service shares through Redis.
 */
export interface SharedBudget {
  readonly name: string;
  /** Pools made on it and not yet closed. */
  readonly pools: number;
  /** Connects it; again, the same promise. PoolModule starts the budgets of its pools before they warm up. */
  start(): Promise<void>;
  /** Gives back what it holds and disconnects; again, nothing. PoolModule closes a budget once no pool is left on it. */
  close(): Promise<void>;
  /** @internal The budget as the pool sees it. */
  readonly [kBudget]: ConnectionBudget;
}

/** @internal A member pool's side for its group: its load, and giving up its oldest idle connection. */
export const kMember = Symbol('nestjs-shared-pool.member');

/** @internal What {@link kMember} gives. */
export interface MemberSide extends BudgetMember {
  /** The member pool's running counters (`released` measures its hold time). */
  readonly counters: { readonly released: number };
  /** Callers queued now. */
  waiting(): number;
  /** Most connections it may have now (its `maxSize`, or more while it grows: see `growMaxSizeTo`). */
  maxSizeNow(): number;
  /** Every connection, from the start of its create to the end of its close (as `load().connections`, in O(1)). */
  connectionCount(): number;
  /** Callers its connections serve now, in O(1). */
  clientCount(): number;
  /** Its ready connections, in O(1). */
  readyCount(): number;
  /** The last create or connection failure, if any. */
  readonly lastError: unknown;
  /** How long the caller queued longest has waited, ms; 0 with none. */
  waitedMs(): number;
  /** How long a create took to be ready, ms, smoothed; 0 before the first. */
  readonly connectMs: number;
  load(minHeldMs: number): MemberLoadFigures;
  retireOldestIdle(minHeldMs: number): boolean;
  /** Retires connections idle for at least `idleMs`, longest idle first, down to `keep` ready ones; how many. `who` gives them back (in the retire's detail). */
  shrinkTo(keep: number, idleMs: number, who: string): number;
}

/** @internal What a member pool holds, as its group's planner weighs it. */
export interface MemberLoadFigures {
  /** Every connection, from the start of its create to the end of its close. */
  readonly connections: number;
  /** Of those, creates in flight. */
  readonly opening: number;
  /** Ready connections serving at least one caller. */
  readonly inUse: number;
  /** Idle ready connections held for at least the minimum hold: the ones the group may take. */
  readonly stealable: number;
  /** Age of the oldest ready connection, ms; 0 with none. */
  readonly oldestMs: number;
}
