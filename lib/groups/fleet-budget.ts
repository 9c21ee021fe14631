// One budget of connections for every instance of a service (issue 50): each connection a pool
// opens, from the start of its create to the end of its close, holds a place in Redis. The places
// are the leases of a RedisLimiter whose global limit is the budget, so they share its machinery:
// one atomic call per place, a heartbeat that keeps them, a dead instance's places back within
// the lease TTL, a pause of one TTL after a Redis restart while live holders register again,
// Sentinel, Cluster, TLS and ACL users; and while Redis is unreachable, each instance keeps what
// it holds and opens at most its share of the budget over the instances last seen. The places
// follow demand: every instance trades its load through Redis and gives back what the fleet's plan
// says another instance's waiting callers need (fleet-shares.ts).
import {
  type Admission,
  type BudgetMember,
  type ConnectionBudget,
  consoleLogger,
  kBudget,
  type MemberSide,
  systemClock,
  Timers,
  type TimerHandle,
} from '../core/index.js';
import { kCountLapsed, kDemand, RedisLimiter } from '../limits/index.js';
import {
  BUDGET_TTL_MS,
  budgetError,
  kFleetPlaces,
  type FleetBudgetOptions,
  type FleetPlaces,
  type FleetBudgetStats,
  resolveFleetBudget,
} from './fleet-budget-options.js';
import { BudgetMetrics } from './budget-metrics.js';
import { decodeLoad, encodeLoad, type FleetShare, fleetShare, InstanceMeter, UNKNOWN_SHARE } from './fleet-shares.js';
import type { MemberLoad } from './group-planner.js';

/** A refusal that comes sooner than this (Redis down, a pause after its restart) is asked again this much later. */
const RETRY_MS = 100;

/**
 * A granted place is given back if no create takes it within this long: longer than a pool's
 * housekeeping interval (1 s by default), whose sweep replaces connections past their lifetime
 * once a place is there.
 */
const SPARE_MS = 1_500;

/** Per member: its connections' places, and those of its connections that lost theirs. */
interface MemberPlaces {
  readonly places: Admission[];
  /**
   * Places that lapsed while their connections stay open (busy): each is released when one of those
   * connections ends, so that this instance counts them until then. Without Redis, the limiter's
   * share per instance then holds the connections that are open, not only those still placed.
   */
  readonly lapsed: Admission[];
  /** Of those connections, the ones not yet retired. */
  owed: number;
}

/**
 * A budget of connections shared by every instance through Redis. Give it to a pool (`budget`
 * option); `start()` it before, `close()` it after the pools (PoolModule does both for the
 * budgets of its pools).
 */
export class FleetBudget {
  readonly name: string;
  readonly maxTotal: number;
  readonly #limiter: FleetPlaces;
  readonly #timers: Timers;
  readonly #askTimeoutMs: number;
  readonly #giveBackAfterMs: number;
  readonly #spare: { admission: Admission; at: number }[] = [];
  readonly #members = new Map<BudgetMember, MemberPlaces>();
  /** Pools asking Redis for a place, each with what aborts its ask (a place of this instance handed to it meanwhile). */
  readonly #asking = new Map<BudgetMember, AbortController>();
  #trim: TimerHandle | undefined;
  #lapsed = 0;
  readonly #exchangeMs: number;
  readonly #minHoldMs: number;
  readonly #meter = new InstanceMeter();
  #exchange: TimerHandle | undefined;
  #exchangedAt = 0;
  /** The last plan: connections still to give back, and what stats() shows. */
  #share: FleetShare = UNKNOWN_SHARE;
  #movedOut = 0;
  /** Plans in a row before the last one in which this instance was over its quota while another was hungry. */
  #overBefore = 0;
  /** movedOut at the last plan. */
  #movedAtPlan = 0;
  #started: Promise<void> | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;
  #pools = 0;
  readonly #metrics: BudgetMetrics | undefined;

  constructor(options: FleetBudgetOptions) {
    const o = resolveFleetBudget(options);
    this.name = o.name;
    this.maxTotal = o.maxTotal;
    this.#askTimeoutMs = o.askTimeoutMs;
    this.#giveBackAfterMs = o.giveBackAfterMs;
    this.#exchangeMs = o.exchangeMs;
    this.#minHoldMs = o.minHoldMs;
    this.#metrics = BudgetMetrics.of(o.metrics, this, this.name);
    const clock = options.clock ?? systemClock;
    this.#timers = new Timers(clock);
    const places = (options as { [kFleetPlaces]?: FleetPlaces })[kFleetPlaces];
    this.#limiter =
      places ??
      budgetError(this.name, () => {
        const limiter = new RedisLimiter({
          name: `budget:${this.name}`,
          global: this.maxTotal,
          wait: true,
          // A TTL of 2 s, not the limiter's 5: a fleet's first connections, and those after a Redis
          // restart, wait one TTL (the quarantine), and a dead instance's places come back after one.
          redis: { namespace: `budget:${this.name}`, leaseTtlMs: BUDGET_TTL_MS, ...options.redis },
          clock,
          logger: options.logger ?? consoleLogger,
        });
        // A lapsed place's connection stays open until its caller leaves: Redis counts it until then.
        limiter[kCountLapsed]();
        return limiter;
      });
  }

  /** Pools made on this budget and not yet closed. */
  get pools(): number {
    return this.#pools;
  }

  /** Connects to Redis (if it is unreachable, the budget starts as the limiter does: see `fallbackAfterMs`). */
  start(): Promise<void> {
    this.#started ??= this.#limiter.start();
    return this.#started;
  }

  /** Gives back what it holds and disconnects: after the pools that use it have closed. Called again: the same close. */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    this.#closed = true;
    this.#metrics?.stop();
    this.#timers.clear(this.#trim);
    this.#timers.clear(this.#exchange);
    for (const { admission } of this.#spare.splice(0)) admission.release();
    await this.#limiter[kDemand].exchange('', this.#staleMs).catch(() => {}); // leaves the exchange
    await this.#limiter.close();
  }

  stats(): FleetBudgetStats {
    const limiter = this.#limiter.stats();
    let held = 0;
    for (const m of this.#members.values()) held += m.places.length;
    return {
      name: this.name,
      maxTotal: this.maxTotal,
      held,
      spare: this.#spare.length,
      asking: this.#asking.size,
      fleetHeld: limiter.used,
      mode: limiter.mode,
      lapsed: this.#lapsed,
      instances: this.#share.instances,
      quota: this.#share.quota,
      waitingElsewhere: this.#share.waitingElsewhere,
      movedOut: this.#movedOut,
      fleet: this.#share.fleet,
      ...(limiter.lastError === undefined ? {} : { lastError: limiter.lastError }),
    };
  }

  /** @internal The budget as a pool sees it. */
  readonly [kBudget]: ConnectionBudget = {
    mayOpen: (member) => this.#mayOpen(member),
    began: (member) => this.#began(member),
    ended: (member) => this.#ended(member),
    connected: () => {},
    starved: (member) => this.#ask(member),
    yields: (member, heldMs) => this.#yields(member, heldMs),
    quiet: () => {},
    name: () => this.name,
    asking: () => this.#asking.size > 0,
    attached: () => void this.#pools++,
    detached: () => void this.#pools--,
  };

  /**
   * Whether a place is spare (one that lapsed while it waited, a freeze, goes back); if none is,
   * one is asked for (a connection to replace, or to open ahead of demand, gets it then).
   */
  #mayOpen(member: BudgetMember): boolean {
    this.#joined(member);
    for (let i = this.#spare.length - 1; i >= 0; i--)
      if (this.#spare[i]!.admission.signal.aborted) this.#spare.splice(i, 1)[0]!.admission.release();
    if (this.#spare.length > 0) return true;
    this.#ask(member);
    return false;
  }

  #placesOf(member: BudgetMember): MemberPlaces {
    let m = this.#members.get(member);
    if (m === undefined) this.#members.set(member, (m = { places: [], lapsed: [], owed: 0 }));
    return m;
  }

  #began(member: BudgetMember): void {
    this.#joined(member);
    const { admission } = this.#spare.pop()!; // mayOpen said there was one
    const m = this.#placesOf(member);
    m.places.push(admission);
    // A place lost while held (a lapsed lease): its connection must go, at once if idle, else when its caller leaves.
    admission.signal.addEventListener('abort', () => this.#lost(member, m, admission), { once: true });
  }

  #ended(member: BudgetMember): void {
    const m = this.#placesOf(member);
    const lapsed = m.lapsed.pop();
    if (lapsed !== undefined) {
      lapsed.release(); // lost already: the limiter stops counting it now that its connection is gone
      if (m.owed > m.lapsed.length) m.owed = m.lapsed.length;
    } else {
      const place = m.places.pop();
      if (place !== undefined) this.#free(place);
    }
    if (m.places.length === 0 && m.lapsed.length === 0) this.#members.delete(member);
  }

  #lost(member: BudgetMember, m: MemberPlaces, admission: Admission): void {
    const at = m.places.indexOf(admission);
    if (at < 0) return; // already given back
    m.places.splice(at, 1);
    this.#lapsed++;
    m.lapsed.push(admission);
    m.owed++;
    const side = member as MemberSide;
    while (m.owed > 0 && side.retireOldestIdle(0)) m.owed--;
  }

  #yields(member: BudgetMember, heldMs: number): boolean {
    const m = this.#members.get(member);
    if (m !== undefined && m.owed > 0) {
      m.owed--;
      return true;
    }
    // Another instance's callers wait for a place this instance holds past its quota.
    if (this.#share.excess === 0 || heldMs < this.#minHoldMs) return false;
    this.#moved();
    return true;
  }

  /** `member` has callers and may not open: ask Redis for a place, waiting for one within askTimeoutMs. */
  #ask(member: BudgetMember): void {
    if (this.#closed || this.#asking.has(member)) return;
    this.#joined(member);
    const ask = new AbortController();
    this.#asking.set(member, ask);
    /** Whether this ask is still the member's: not handed a place meanwhile (see #free). */
    const current = () => this.#asking.get(member) === ask;
    const asked = this.#timers.now();
    void this.start()
      .then(() => {
        if (this.#share.holdBack) throw new Error('another instance is owed the places this one gives back');
        return this.#limiter.admit({ pool: this.name, key: null, timeoutMs: this.#askTimeoutMs, signal: ask.signal });
      })
      .then(
        (admission) => {
          // Handed a place meanwhile: this one goes to another pool that asks, or back.
          if (!current()) return this.#free(admission);
          this.#asking.delete(member);
          if (this.#closed) return admission.release();
          this.#spare.push({ admission, at: this.#timers.now() });
          this.#scheduleTrim();
          member.demand();
        },
        () => {
          if (!current()) return; // handed a place meanwhile
          // No place within the wait, or none to be had now (Redis down, a pause after its
          // restart): ask again while the member's callers wait, not sooner than RETRY_MS apart.
          const again = () => {
            if (!current()) return;
            this.#asking.delete(member);
            if (!this.#closed && (member as MemberSide).waiting() > 0) this.#ask(member);
          };
          const left = RETRY_MS - (this.#timers.now() - asked);
          if (left <= 0) again();
          else this.#timers.set(again, left);
        },
      );
  }

  /**
   * A place this instance's connection no longer holds: to a pool of this instance that asks for
   * one, without a round trip (a group passing a place between its members), unless another
   * instance is owed places; else back to Redis.
   */
  #free(place: Admission): void {
    const first = this.#asking.entries().next();
    if (first.done === true || this.#closed || this.#share.holdBack || place.signal.aborted) {
      place.release();
      return;
    }
    const [member, ask] = first.value;
    this.#asking.delete(member);
    ask.abort(new Error('a place of this instance was handed over'));
    this.#spare.push({ admission: place, at: this.#timers.now() });
    this.#scheduleTrim();
    member.demand();
  }

  /** `member` has load on the budget: it counts in this instance's demand, which the fleet hears from now on. */
  #joined(member: BudgetMember): void {
    this.#meter.sides.add(member as MemberSide);
    if (this.#exchange !== undefined || this.#closed) return;
    this.#exchangedAt = this.#timers.now();
    this.#exchange = this.#timers.set(() => void this.#trade(), 0);
  }

  /** How long an instance's figures count without a newer word from it. */
  get #staleMs(): number {
    return Math.max(1_000, 4 * this.#exchangeMs);
  }

  /**
   * One exchange of demand: this instance's load out, every instance's in, the fleet's plan over
   * them; then idle connections past the quota go at once, busy ones as they come back (#yields),
   * and connections idle for giveBackAfterMs go back to the fleet.
   * Every exchangeMs while this instance has pools with load; then once more, empty, to leave.
   */
  async #trade(): Promise<void> {
    const now = this.#timers.now();
    const load = this.#meter.measure(now, now - this.#exchangedAt, this.#minHoldMs);
    this.#exchangedAt = now;
    const active = this.#meter.sides.size > 0;
    const demand = this.#limiter[kDemand];
    try {
      await this.start();
      const fleet = await demand.exchange(active ? encodeLoad(load) : '', this.#staleMs);
      const loads: MemberLoad[] = [{ key: demand.instance, ...load }];
      const places = new Map<string, number>();
      for (const [instance, heard] of fleet) {
        places.set(instance, heard.places);
        const other = instance === demand.instance ? undefined : decodeLoad(instance, heard.figures);
        if (other !== undefined) loads.push(other);
      }
      this.#overBefore = this.#share.over > 0 ? this.#overBefore + 1 : 0;
      const share = fleetShare(demand.instance, loads, this.maxTotal, this.#minHoldMs, this.#overBefore, places);
      // Right after a move, this instance's figures still count the connections it is closing, and
      // the others' do not yet count what they open: no move in the plan after one.
      const moved = this.#movedOut !== this.#movedAtPlan;
      this.#movedAtPlan = this.#movedOut;
      this.#share = moved ? { ...share, excess: 0 } : share;
    } catch {
      // Redis unreachable: no word of the others, so no moves; each instance keeps what it holds.
      this.#share = UNKNOWN_SHARE;
    }
    if (this.#closed) return;
    for (const side of this.#meter.sides) {
      while (this.#share.excess > 0 && side.retireOldestIdle(this.#minHoldMs)) this.#moved();
      // Idle for giveBackAfterMs: back to the fleet, so a quiet instance keeps no places from a busy
      // one; but a pool that calls now and then keeps one while the budget has one for every
      // instance that wants one, or each of its calls would wait for a connect and a place.
      const keep = !this.#share.short && this.#meter.recurring(side, now, this.#minHoldMs) ? 1 : 0;
      if (this.#giveBackAfterMs !== Infinity) side.shrinkTo(keep, this.#giveBackAfterMs, `budget "${this.name}"`);
    }
    this.#exchange =
      active || this.#meter.sides.size > 0 ? this.#timers.set(() => void this.#trade(), this.#exchangeMs) : undefined;
  }

  /** A connection closed, its place going to another instance. */
  #moved(): void {
    this.#movedOut++;
    this.#share = { ...this.#share, excess: this.#share.excess - 1 };
  }

  /** Places granted that no create took (its callers left) go back. */
  #scheduleTrim(): void {
    if (this.#trim !== undefined) return;
    this.#trim = this.#timers.set(() => {
      this.#trim = undefined;
      const now = this.#timers.now();
      for (let i = this.#spare.length - 1; i >= 0; i--)
        if (now - this.#spare[i]!.at >= SPARE_MS) this.#spare.splice(i, 1)[0]!.admission.release();
      if (this.#spare.length > 0) this.#scheduleTrim();
    }, SPARE_MS);
  }
}
