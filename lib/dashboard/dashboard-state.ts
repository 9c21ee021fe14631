import {
  type LimiterMode,
  type PoolCounters,
  type PoolHealth,
  type PoolStats,
  scrubbed,
  type TimingWatch,
  watchedQuantile,
} from '../core/index.js';
import type { FleetBudgetStats, PoolGroupSummary } from '../groups/index.js';
import {
  limiterView,
  troubleOf,
  type DashboardBudget,
  type DashboardGroup,
  type DashboardMember,
  type DashboardPool,
  type DashboardRates,
  type DashboardSnapshot,
  type HealthChange,
  type WindowQuantiles,
} from './dashboard-snapshot.js';

/** What the dashboard reads of a pool: its stats, and its timings while watched (a stand-in may lack either). */
export interface WatchedPool {
  stats?(): PoolStats;
  watchTimings?(): TimingWatch;
  /** Its options: a `budget` it shares with other instances (a `FleetBudget`) is shown beside the pools. */
  readonly options?: { readonly budget?: unknown };
}

/** What the dashboard reads of a fleet budget. */
interface WatchedBudget {
  stats(): FleetBudgetStats;
}

const isBudget = (b: unknown): b is WatchedBudget =>
  typeof b === 'object' && b !== null && typeof (b as Partial<WatchedBudget>).stats === 'function';

/** What the dashboard reads of a group. */
export interface WatchedGroup {
  /** Its figures and the members most in trouble, at most `rows`: cheap however many members it has. */
  summary(rows: number): PoolGroupSummary;
  /** Its options: a fleet budget it shares is shown as a pool's is. */
  readonly options?: { readonly budget?: unknown };
}

/** One name of the application: a pool or a group. */
export type Watched =
  { readonly name: string; readonly pool: WatchedPool } | { readonly name: string; readonly group: WatchedGroup };

/** The settings the state needs. */
export interface StateSettings {
  readonly intervalMs: number;
  readonly maxConnectionRows: number;
  readonly maxMemberRows: number;
}

/** Samples for the last-minute figures are kept this far apart, and this long. */
const SAMPLE_EVERY_MS = 5_000;
const WINDOW_MS = 60_000;
/** Health changes kept per pool or group. */
const TIMELINE = 60;

interface Sample {
  readonly at: number;
  readonly wait: readonly number[] | undefined;
  readonly hold: readonly number[] | undefined;
  readonly counters: PoolCounters | undefined;
  readonly refused: { global: number; key: number } | undefined;
  readonly transfers: number;
}

/** What the dashboard remembers of one pool or group between ticks. */
class Track {
  watch: TimingWatch | undefined;
  readonly samples: Sample[] = [];
  readonly timeline: HealthChange[] = [];
  readonly modes: { at: number; mode: LimiterMode }[] = [];
  /** The tick that last saw it. */
  seen = 0;

  observe(at: number, health: PoolHealth): void {
    const last = this.timeline[this.timeline.length - 1];
    if (last?.health === health) return;
    this.timeline.push({ at, health });
    if (this.timeline.length > TIMELINE) this.timeline.shift();
  }

  observeMode(at: number, mode: LimiterMode): void {
    if (this.modes[this.modes.length - 1]?.mode === mode) return;
    this.modes.push({ at, mode });
    if (this.modes.length > TIMELINE) this.modes.shift();
  }

  /** Keeps `sample` if the last kept one is old enough; returns the oldest kept within the window. */
  sample(sample: Sample): Sample {
    const samples = this.samples;
    const last = samples[samples.length - 1];
    if (last === undefined || sample.at - last.at >= SAMPLE_EVERY_MS) samples.push(sample);
    while (samples.length > 1 && sample.at - samples[1]!.at >= WINDOW_MS) samples.shift();
    return samples[0]!;
  }

  /** As sample(), for a group or a budget: only a count of moves to rate. */
  sampleMoves(at: number, transfers: number): Sample {
    return this.sample({ at, wait: undefined, hold: undefined, counters: undefined, refused: undefined, transfers });
  }

  stop(): void {
    this.watch?.stop();
    this.watch = undefined;
  }
}

/**
 * Builds the dashboard's snapshots: one per tick, whatever the number of viewers. Between ticks
 * it keeps, per pool, a sample every 5 s for a minute (for quantiles and rates over the last
 * minute) and the health changes it saw. `start()` opens the pools' timing watches, `stop()`
 * closes them: while no page is open, the pools time nothing for the dashboard.
 */
export class DashboardState {
  readonly #tracks = new Map<string, Track>();
  #tick = 0;
  #running = false;

  constructor(
    private readonly watched: () => Iterable<Watched>,
    private readonly settings: StateSettings,
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    this.#running = true;
  }

  /** No page is open: the timing watches close, and what was remembered is dropped. */
  stop(): void {
    this.#running = false;
    for (const track of this.#tracks.values()) track.stop();
    this.#tracks.clear();
  }

  /** The snapshot of now; `viewers`: pages open; `busyMs`: the feed's time so far. */
  snapshot(viewers: number, busyMs = 0): DashboardSnapshot {
    const at = this.now();
    const tick = ++this.#tick;
    const pools: DashboardPool[] = [];
    const groups: DashboardGroup[] = [];
    /** Each budget the pools share, with the names of its pools. */
    const budgetPools = new Map<WatchedBudget, string[]>();
    for (const w of this.watched()) {
      const track = this.#track(w.name, tick);
      try {
        if ('group' in w) groups.push(this.#group(w.group.summary(this.settings.maxMemberRows), track, at));
        else if (typeof w.pool.stats === 'function') pools.push(this.#pool(w.pool, w.pool.stats(), track, at));
        const budget = 'pool' in w ? w.pool.options?.budget : w.group.options?.budget;
        if (isBudget(budget)) budgetPools.set(budget, [...(budgetPools.get(budget) ?? []), w.name]);
      } catch {
        // A provider whose stats() throws (a test's stand-in, say) is left out; the others are shown.
      }
    }
    const budgets: DashboardBudget[] = [];
    for (const [budget, names] of budgetPools) {
      try {
        const b = budget.stats();
        budgets.push(this.#budget(b, names, this.#track(`budget:${b.name}`, tick), at));
      } catch {
        // As a pool's: left out.
      }
    }
    for (const [name, track] of this.#tracks) {
      if (track.seen === tick) continue;
      track.stop();
      this.#tracks.delete(name);
    }
    pools.sort((a, b) => b.trouble - a.trouble || a.name.localeCompare(b.name));
    groups.sort((a, b) => b.trouble - a.trouble || a.name.localeCompare(b.name));
    budgets.sort((a, b) => a.name.localeCompare(b.name));
    return {
      at,
      intervalMs: this.settings.intervalMs,
      viewers,
      busyMs: Math.round(busyMs * 1000) / 1000,
      pools,
      groups,
      budgets,
    };
  }

  #track(name: string, tick: number): Track {
    let track = this.#tracks.get(name);
    if (track === undefined) this.#tracks.set(name, (track = new Track()));
    track.seen = tick;
    return track;
  }

  #pool(pool: WatchedPool, s: PoolStats, track: Track, at: number): DashboardPool {
    if (this.#running && track.watch === undefined && typeof pool.watchTimings === 'function' && !s.closed)
      track.watch = pool.watchTimings();
    const timings = track.watch?.read();
    const a = s.admission;
    const refused = a === undefined ? undefined : { global: a.counters.refusedGlobal, key: a.counters.refusedKey };
    const base = track.sample({
      at,
      wait: timings?.wait.counts,
      hold: timings?.hold.counts,
      counters: s.counters,
      refused,
      transfers: 0,
    });
    track.observe(at, s.health);
    if (a !== undefined) track.observeMode(at, a.mode);
    const seconds = Math.max(at - base.at, 1_000) / 1_000;
    const rows = s.connections.slice(0, this.settings.maxConnectionRows);
    return {
      name: s.name,
      health: s.health,
      closed: s.closed,
      trouble: troubleOf(s.health, s.waiting, s.utilization, s.closed),
      utilization: s.utilization,
      size: s.size,
      maxSize: s.maxSize,
      minSize: s.minSize,
      ready: s.ready,
      opening: s.opening,
      draining: s.draining,
      idle: s.idle,
      clientLimit: s.clientLimit,
      clients: s.clients,
      waiting: s.waiting,
      oldestWaitMs: Math.round(s.oldestWaitMs ?? 0),
      breaker: s.breaker,
      lastError: scrubbed(s.lastError),
      connections: rows.map((c) => ({
        id: c.id,
        state: c.state,
        clients: c.clients,
        ageMs: Math.round(c.ageMs),
        uses: c.uses,
        idleMs: Math.round(c.idleMs),
      })),
      moreConnections: s.connections.length - rows.length,
      timeline: [...track.timeline],
      waitMs: timings === undefined ? null : windowOf(timings.wait.counts, base.wait),
      holdMs: timings === undefined ? null : windowOf(timings.hold.counts, base.hold),
      rates: ratesOf(s.counters, base.counters ?? s.counters, seconds),
      counters: s.counters,
      limiter:
        a === undefined
          ? null
          : limiterView(
              a,
              {
                global: perSec(refused!.global, base.refused?.global, seconds),
                key: perSec(refused!.key, base.refused?.key, seconds),
              },
              [...track.modes],
            ),
    };
  }

  #budget(b: FleetBudgetStats, pools: readonly string[], track: Track, at: number): DashboardBudget {
    const base = track.sampleMoves(at, b.movedOut);
    const waiting = b.waitingElsewhere + (b.fleet.find((f) => f.self)?.waiting ?? 0);
    const health: PoolHealth =
      waiting > 0 && b.fleetHeld >= b.maxTotal ? 'exhausted' : b.mode === 'redis' ? 'healthy' : 'degraded';
    track.observe(at, health);
    const seconds = Math.max(at - base.at, 1_000) / 1_000;
    return {
      name: b.name,
      health,
      maxTotal: b.maxTotal,
      fleetHeld: b.fleetHeld,
      held: b.held,
      spare: b.spare,
      asking: b.asking,
      mode: b.mode,
      lapsed: b.lapsed,
      quota: b.quota,
      waitingElsewhere: b.waitingElsewhere,
      movedOut: b.movedOut,
      movedPerSec: perSec(b.movedOut, base.transfers, seconds),
      lastError: scrubbed(b.lastError),
      pools: [...pools].sort(),
      fleet: b.fleet,
      timeline: [...track.timeline],
    };
  }

  #group(g: PoolGroupSummary, track: Track, at: number): DashboardGroup {
    const base = track.sampleMoves(at, g.transfers);
    track.observe(at, g.health);
    const seconds = Math.max(at - base.at, 1_000) / 1_000;
    // Already the rows the page shows, most trouble first.
    const members: DashboardMember[] = g.members;
    return {
      name: g.name,
      health: g.health,
      trouble: troubleOf(g.health, g.waiting, g.utilization),
      maxTotal: g.maxTotal,
      total: g.total,
      clientLimit: g.clientLimit,
      utilization: g.utilization,
      waiting: g.waiting,
      transfers: g.transfers,
      transfersPerSec: perSec(g.transfers, base.transfers, seconds),
      givenBack: g.givenBack,
      forgotten: g.forgotten,
      memberCount: g.memberCount,
      hungry: g.hungry,
      members,
      timeline: [...track.timeline],
    };
  }
}

/** Quantiles of what was counted since `base` (cumulative counts then), or since the watch began. */
function windowOf(now: readonly number[], base: readonly number[] | undefined): WindowQuantiles {
  const counts = base === undefined || base.length !== now.length ? now : now.map((c, i) => c - base[i]!);
  let count = 0;
  for (const c of counts) count += c;
  const q = (p: number) => {
    const v = watchedQuantile(counts, p);
    return v === undefined ? null : Math.round(v * 1000) / 1000;
  };
  return { count, p50: q(0.5), p90: q(0.9), p99: q(0.99) };
}

function perSec(now: number, base: number | undefined, seconds: number): number {
  return Math.round(((now - (base ?? now)) / seconds) * 100) / 100;
}

function ratesOf(now: PoolCounters, base: PoolCounters, seconds: number): DashboardRates {
  const retiredBy = {} as Record<keyof PoolCounters['retiredBy'], number>;
  for (const reason of Object.keys(now.retiredBy) as (keyof PoolCounters['retiredBy'])[])
    retiredBy[reason] = perSec(now.retiredBy[reason], base.retiredBy[reason], seconds);
  return {
    acquired: perSec(now.acquired, base.acquired, seconds),
    timeouts: perSec(now.timeouts, base.timeouts, seconds),
    failedFast: perSec(now.failedFast, base.failedFast, seconds),
    leaks: perSec(now.leaks, base.leaks, seconds),
    expiredHolds: perSec(now.expiredHolds, base.expiredHolds, seconds),
    createFailures: perSec(now.createFailures, base.createFailures, seconds),
    retiredBy,
  };
}
