import { connectionsFor, type MemberLoad, type PlanSettings } from './group-planner.js';
import { PlannedShares, type SharedMember } from './planned-shares.js';

/** A member as the transfers see it. */
export interface TransferMember extends SharedMember {
  /** Its connections the group retired for another member, not yet closed. */
  giving: number;
}

/** What the transfers ask of their group. */
export interface TransferGroup<M> {
  readonly maxTotal: number;
  readonly clientLimit: number;
  /** Connections of every member now, opening and closing ones included. */
  total(): number;
  members(): Iterable<M>;
  /** The planner's view of `members`, in their order, with the minimum hold in force. */
  loads(members: readonly M[], minHoldMs: number): MemberLoad[];
  settings(): PlanSettings;
  now(): number;
}

/**
 * Places moving between the members of a group whose budget is spent: a hungry member that
 * starves takes an idle place of the most overfull one, a connection an overfull member lets go
 * of goes to the hungriest member that waits, and a freed place goes to the members that wait.
 * Each decision costs O(log n) in the number of members (see PlannedShares); the shares are
 * planned at most once a tick, when a decision needs them.
 */
export class PlaceTransfers<M extends TransferMember> {
  readonly #shares: PlannedShares<M>;
  #planDue = true;
  #plannedAt = -Infinity;
  /** The minimum hold in force, as of the last plan. */
  #minHoldMs = 0;
  /** Members that had callers they could not serve (some may have none by now): those a place may go to. */
  readonly #starving = new Set<M>();
  /** Connections retired for another member, not yet closed: places on their way. */
  freeing = 0;
  /** Places moved from one member to another. */
  transfers = 0;

  constructor(readonly group: TransferGroup<M>) {
    this.#shares = new PlannedShares<M>(() => group.now());
  }

  /** The group's tick: the shares are planned anew at the next decision, and members still waiting take what they could not before (too young). */
  tick(): void {
    this.#planDue = true;
    this.handOut();
    if (this.group.total() < this.group.maxTotal) return;
    for (const m of this.group.members()) if (m.side.waiting() > 0) this.#starving.add(m);
    // What the starving wait for is counted once: each steal adds a place on its way, and the
    // loop stops once they cover it (asking #placesCover before each steal made a tick quadratic
    // in the members that wait: a second with a thousand new keys at once).
    const unmet = this.#unmet();
    for (const m of this.#starving) {
      if (this.freeing >= unmet || this.group.total() < this.group.maxTotal) return;
      this.#stealFor(m);
    }
  }

  /** `member` has callers it cannot serve and the budget is spent: take a place for it. */
  starved(member: M): void {
    this.#starving.add(member);
    this.#planned().starved(member);
    this.steal(member);
  }

  /**
   * Whether the connection `member`'s last client leaves, held `heldMs`, goes to a hungrier
   * member. A member keeps it while it is hungry, or has waiters and is within its share; an
   * overfull one gives it, once held for the minimum hold, to the hungriest member that waits,
   * even with waiters of its own (else a busy member's queue would take every connection it frees).
   */
  yields(member: M, heldMs: number): boolean {
    if (this.group.total() < this.group.maxTotal) return false;
    const shares = this.#planned();
    // Too young, or enough places on their way: the member keeps its connection.
    if (heldMs < this.#minHoldMs || this.#placesCover(member)) return false;
    const hunger = shares.hungerOf(member);
    if (hunger === 'hungry' || (member.side.waiting() > 0 && hunger !== 'overfull')) return false;
    if (member.side.connectionCount() <= member.keeps) return false;
    if (shares.hungriestWaiting(member) === undefined) return false;
    this.#giving(member);
    return true;
  }

  /** Takes an idle place of the most overfull member for hungry `taker`, unless enough are on their way. */
  steal(taker: M): void {
    if (this.group.total() < this.group.maxTotal || this.#placesCover()) return;
    this.#stealFor(taker);
  }

  #stealFor(taker: M): void {
    const shares = this.#planned();
    if (shares.hungerOf(taker) !== 'hungry') return;
    const victim = shares.mostOverfull(taker, this.#minHoldMs);
    if (victim !== undefined && victim.side.retireOldestIdle(this.#minHoldMs)) this.#giving(victim);
  }

  /** Free places go to members that wait: the hungriest first (the planner's order), then any that starved. */
  handOut(): void {
    const group = this.group;
    if (group.total() >= group.maxTotal || this.#starving.size === 0) return;
    const shares = this.#planned();
    const asked = new Set<M>();
    // Each asked member leaves the heap; one that did not take the place comes back when it starves again.
    for (
      let m = shares.takeHungriestWaiting();
      m !== undefined;
      m = group.total() < group.maxTotal ? shares.takeHungriestWaiting() : undefined
    ) {
      asked.add(m);
      m.side.demand();
    }
    for (const m of this.#starving) {
      if (group.total() >= group.maxTotal) return;
      if (m.side.waiting() === 0) this.#starving.delete(m);
      else if (!asked.has(m)) m.side.demand();
    }
  }

  /** A connection of `member` is gone: if the group retired it for another member, that place has arrived. */
  ended(member: M): void {
    if (member.giving === 0) return;
    member.giving--;
    this.freeing--;
  }

  /** `member` is forgotten: its closes still end (and free their places), but no longer under its name. */
  forget(member: M): void {
    this.#starving.delete(member);
    this.freeing -= member.giving;
    member.giving = 0;
  }

  /**
   * The shares of the budget (each member's `quota`, and `hungerOf` it), planned anew if due and
   * the last plan is older than `maxAgeMs`: a view that may lag a little plans less often.
   */
  shares(maxAgeMs = 0): PlannedShares<M> {
    if (this.#planDue && this.group.now() - this.#plannedAt < maxAgeMs) return this.#shares;
    return this.#planned();
  }

  /** The shares of the budget, planned anew if due. */
  #planned(): PlannedShares<M> {
    if (this.#planDue) {
      this.#planDue = false;
      this.#plannedAt = this.group.now();
      const members = [...this.group.members()];
      const settings = this.group.settings();
      this.#minHoldMs = settings.minHoldMs;
      this.#shares.replan(members, this.group.loads(members, settings.minHoldMs), settings);
    }
    return this.#shares;
  }

  /**
   * Whether the places on their way cover what the starving members other than `except` wait
   * for and are not opening. It stops counting once they do not, so it looks at about as many
   * members as there are places on their way.
   */
  #placesCover(except?: M): boolean {
    const perConnection = this.group.clientLimit;
    let unmet = 0;
    for (const m of this.#starving) {
      const waiting = m.side.waiting();
      if (waiting === 0) this.#starving.delete(m);
      else if (m !== except)
        unmet += Math.max(0, connectionsFor(0, waiting, perConnection) - m.side.load(Infinity).opening);
      if (unmet > this.freeing) return false;
    }
    return true;
  }

  /** Connections the starving members wait for and are not opening (those that no longer wait leave the set). */
  #unmet(): number {
    const perConnection = this.group.clientLimit;
    let unmet = 0;
    for (const m of this.#starving) {
      const waiting = m.side.waiting();
      if (waiting === 0) this.#starving.delete(m);
      else unmet += Math.max(0, connectionsFor(0, waiting, perConnection) - m.side.load(Infinity).opening);
    }
    return unmet;
  }

  #giving(member: M): void {
    member.giving++;
    this.freeing++;
    this.transfers++;
  }
}
