import type { MemberSide } from '../core/index.js';
import { planMembers, type Hunger, type MemberLoad, type PlanSettings } from './group-planner.js';

/** What the shares keep on a member: its share of a spent budget, as planned at the last tick. */
export interface SharedMember {
  readonly key: string;
  readonly side: MemberSide;
  /** Connections planned for it. */
  quota: number;
  /** Its demand in database time (the hungry member with the most comes first). */
  demand: number;
  /** Connections it keeps even when another member waits: 1 while it calls now and then (see MemberLoad.recurring). */
  keeps: number;
}

/** A max-heap of members by a key fixed when they enter; a member is in it at most once. */
class MemberHeap<M> {
  readonly #items: { member: M; key: number }[] = [];
  readonly #in = new Set<M>();

  get size(): number {
    return this.#items.length;
  }

  push(member: M, key: number): void {
    if (this.#in.has(member)) return;
    this.#in.add(member);
    const items = this.#items;
    let i = items.push({ member, key }) - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent]!.key >= key) break;
      [items[i], items[parent]] = [items[parent]!, items[i]!];
      i = parent;
    }
  }

  peek(): M | undefined {
    return this.#items[0]?.member;
  }

  /** Takes the top out: the member and the key it entered with. */
  pop(): { member: M; key: number } | undefined {
    const items = this.#items;
    const top = items[0];
    if (top === undefined) return undefined;
    const last = items.pop()!;
    this.#in.delete(top.member);
    if (items.length === 0) return top;
    items[0] = last;
    for (let i = 0; ;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let largest = i;
      if (l < items.length && items[l]!.key > items[largest]!.key) largest = l;
      if (r < items.length && items[r]!.key > items[largest]!.key) largest = r;
      if (largest === i) break;
      [items[i], items[largest]] = [items[largest]!, items[i]!];
      i = largest;
    }
    return top;
  }

  clear(): void {
    this.#items.length = 0;
    this.#in.clear();
  }
}

/**
 * A spent budget's shares, kept between the group's ticks so that a release or a starved acquire
 * costs O(log n) in the number of members instead of a plan over all of them. Quotas and demands
 * are planned at most once a tick (see PlaceTransfers): they follow the members' smoothed need
 * and hold time, which change only then. Hunger is read live, each member's connections against its quota (a member with
 * callers and no connection that the plan gave nothing counts as owed one, as the planner gives
 * every member with demand one first). Two heaps, lazy (an entry found stale at the top is
 * dropped; a member that starves again comes back), give the hungry member whose caller has waited
 * longest and the most overfull member with an idle connection it may give up.
 */
export class PlannedShares<M extends SharedMember> {
  readonly #hungry = new MemberHeap<M>();
  readonly #overfull = new MemberHeap<M>();
  /** More members have demand than the budget has places: they take turns, and none keeps an idle place. */
  #short = false;

  /** `now`: the group's clock. */
  constructor(readonly now: () => number) {}

  /** Plans every member's quota from `loads` (in the order of `members`), and refills both heaps. */
  replan(members: readonly M[], loads: readonly MemberLoad[], settings: PlanSettings): void {
    const plans = planMembers(loads, settings);
    this.#hungry.clear();
    this.#overfull.clear();
    let wanting = 0;
    for (const plan of plans) if (plan.demand > 0) wanting++;
    this.#short = wanting > settings.maxTotal;
    for (let i = 0; i < members.length; i++) {
      const member = members[i]!;
      const plan = plans[i]!;
      member.quota = plan.quota;
      member.demand = plan.demand;
      // With a short budget members take turns: none keeps a place it does not use.
      member.keeps = loads[i]!.recurring === true && !this.#short ? 1 : 0;
      if (plan.hunger === 'overfull') this.#overfull.push(member, plan.score);
      else if (plan.hunger === 'hungry' && loads[i]!.waiting > 0) this.#hungry.push(member, this.#rank(member));
    }
  }

  /** How `member` stands against its share now (`waiting`: its callers waiting, if read already). */
  hungerOf(member: M, waiting?: number): Hunger {
    const connections = member.side.connectionCount();
    const owed = member.quota === 0 && connections === 0 && (waiting ?? member.side.waiting()) > 0 ? 1 : member.quota;
    return connections < owed ? 'hungry' : connections > owed ? 'overfull' : 'satisfied';
  }

  /** `member` has callers it cannot serve: it may be the hungriest that waits. */
  starved(member: M): void {
    if (this.hungerOf(member) === 'hungry') this.#hungry.push(member, this.#rank(member));
  }

  /**
   * A hungry member's place in line: when its caller that waited longest began, earlier first.
   * Waiting time is what the group evens out: by demand, a member starved at one connection with
   * many callers waiting stayed there while a member with more demand grew.
   */
  #rank(member: M): number {
    return member.side.waitedMs() - this.now();
  }

  /** The hungriest member other than `except` that has callers waiting, or undefined. */
  hungriestWaiting(except?: M): M | undefined {
    return this.#top(this.#hungry, except, (m) => m.side.waiting() > 0 && this.hungerOf(m) === 'hungry');
  }

  /** The hungriest member that has callers waiting, taken out of the heap (it comes back when it starves again), or undefined. */
  takeHungriestWaiting(): M | undefined {
    const m = this.hungriestWaiting();
    if (m !== undefined) this.#hungry.pop();
    return m;
  }

  /** The most overfull member other than `except` with an idle connection it may give up (held at least `minHeldMs`), or undefined. */
  mostOverfull(except: M, minHeldMs: number): M | undefined {
    return this.#top(
      this.#overfull,
      except,
      (m) => this.hungerOf(m) === 'overfull' && m.side.load(minHeldMs).stealable > 0,
    );
  }

  /** The top of `heap` that is still `valid`, other than `except` (which stays in the heap); stale entries are dropped. */
  #top(heap: MemberHeap<M>, except: M | undefined, valid: (m: M) => boolean): M | undefined {
    let skipped: { member: M; key: number } | undefined;
    let found: M | undefined;
    for (let m = heap.peek(); m !== undefined; m = heap.peek()) {
      if (m === except) skipped = heap.pop();
      else if (valid(m)) {
        found = m;
        break;
      } else heap.pop();
    }
    if (skipped !== undefined) heap.push(skipped.member, skipped.key);
    return found;
  }
}
