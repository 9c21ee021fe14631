import { Injectable } from '@nestjs/common';
import {
  PoolConfigError,
  scrub,
  type LimiterMode,
  type PoolHealth,
  type PoolStats,
  type StandingState,
} from '../core/index.js';
import type { PoolGroupSummary } from '../groups/index.js';
import { PoolRegistry } from './pool-registry.js';

/** Pool states that can be counted as down (`healthy` never is). */
export type DownState = Exclude<PoolHealth, 'healthy'>;

/** Options of {@link PoolHealthIndicator.isHealthy}. */
export interface PoolHealthCheckOptions {
  /** The pools to report. Default: every pool of the application. */
  pools?: readonly string[];
  /**
   * Which pool states make the check down; the other states short of `healthy` make it
   * degraded. Default `['exhausted', 'failing']`: callers queue or nothing connects. For a
   * liveness probe, `['failing']` keeps a busy pod alive (a restart would not make it less busy).
   */
  downOn?: readonly DownState[];
}

/** What the health check reports for one pool. */
export interface PoolHealthDetails {
  /** The pool's health, or `missing` for a name in `pools` that no pool has (or whose provider cannot report). */
  health: PoolHealth | 'missing';
  size: number;
  ready: number;
  maxSize: number;
  clients: number;
  clientLimit: number;
  /** Clients / (maxSize × clientLimit), to 4 decimals. */
  utilization: number;
  waiting: number;
  /** The last error's text, credentials hidden (see `scrub`): /health is often open to anyone. */
  lastError: string | null;
  /** For a pool on a budget (`FleetBudget`): its name, and whether callers wait for a place in it while the pool has room. */
  budget?: { name: string; holdsBack: boolean };
  /** For a pool group: its members now (its `size` and `maxSize` are then the group's connections and `maxTotal`). */
  members?: number;
  /**
   * The pool's admission limiter, when it has one. An adaptive one adds `adaptive`: its algorithm,
   * whether the limit is shared through Redis, the pause an upstream asked for (ms left), and its last change.
   */
  admission?: {
    mode: LimiterMode;
    used: number;
    limit: number | null;
    utilization: number;
    adaptive?: {
      algorithm: string;
      shared: boolean;
      pausedMs: number;
      lastChange: { from: number; to: number; reason: string } | null;
    };
    /** Under controlled waiting: whether its queue stands (newcomers refused at once) and how many it shed. */
    standing?: StandingSummary;
    /** With priority classes: each class's slots, waiters and refusals. */
    classes?: { name: string; used: number; waiting: number; refused: number }[];
  };
  /** The pool's own queue under controlled waiting: whether it stands and how many it shed. */
  standing?: StandingSummary;
}

/** A queue under controlled waiting, as the health check reports it. */
export interface StandingSummary {
  standing: boolean;
  /** The target wait, ms; null while not known. */
  targetMs: number | null;
  shed: number;
}

function standingOf(state: StandingState | undefined): { standing?: StandingSummary } {
  if (state === undefined) return {};
  const targetMs = Number.isFinite(state.targetMs) ? Math.round(state.targetMs) : null;
  return { standing: { standing: state.standing, targetMs, shed: state.shed } };
}

/** The status of a check, as Terminus reads it. */
export type PoolCheckStatus = 'up' | 'degraded' | 'down';
type Status = PoolCheckStatus;

/**
 * What {@link PoolHealthIndicator.isHealthy} returns: the shape of Terminus's
 * `HealthIndicatorResult`, the details of each pool beside the status.
 */
export type PoolHealthResult<Key extends string = string> = Record<
  Key,
  { status: PoolCheckStatus } & Record<string, PoolHealthDetails | PoolCheckStatus>
>;

const DOWN_BY_DEFAULT: readonly DownState[] = ['exhausted', 'failing'];
const DOWN_STATES: readonly string[] = ['degraded', 'critical', 'exhausted', 'failing'];
const RANK: Record<Status, number> = { up: 0, degraded: 1, down: 2 };
const worse = (a: Status, b: Status): Status => (RANK[b] > RANK[a] ? b : a);
/** Limits that are only approximate (Redis away, or re-registering) degrade; refusing everything is down. */
const ADMISSION_STATUS: Record<LimiterMode, Status> = {
  local: 'up',
  redis: 'up',
  quarantine: 'degraded',
  unreachable: 'degraded',
  fallback: 'degraded',
  'fail-closed': 'down',
};

/**
 * Health indicator of the pools for Terminus (`HealthCheckService.check`), or for any check of
 * your own: it needs nothing of Terminus. `healthy` is up; `exhausted` and `failing` are down
 * (`downOn` changes which), the other states degraded (still serving). A limiter that is not
 * sharing its limits through Redis right now (quarantine, unreachable, fallback) makes it
 * degraded, one that fails closed down. The worst pool sets the status.
 *
 * ```ts
 * this.health.check([() => this.pools.isHealthy('pools')]);
 * ```
 */
@Injectable()
export class PoolHealthIndicator {
  constructor(private readonly registry: PoolRegistry) {}

  isHealthy<const Key extends string>(key: Key, options: PoolHealthCheckOptions = {}): PoolHealthResult<Key> {
    const downOn = checkDownOn(options.downOn ?? DOWN_BY_DEFAULT);
    const details: Record<string, PoolHealthDetails> = {};
    let status: Status = 'up';
    for (const name of options.pools ?? this.registry.names()) {
      const group = this.registry.group(name);
      const pool = group === undefined ? this.registry.get(name) : undefined;
      const stats = pool?.stats?.();
      const row =
        group !== undefined
          ? reportGroup(group.summary(0))
          : stats !== undefined
            ? report(stats)
            : missing(
                pool === undefined
                  ? `no pool named "${name}" in this application`
                  : `the provider of pool "${name}" has no stats() (a stand-in from a test?)`,
              );
      details[name] = row;
      const poolStatus: Status =
        row.health === 'healthy' ? 'up' : row.health === 'missing' || downOn.includes(row.health) ? 'down' : 'degraded';
      status = worse(
        status,
        worse(poolStatus, row.admission === undefined ? 'up' : ADMISSION_STATUS[row.admission.mode]),
      );
    }
    return { [key]: { ...details, status } } as PoolHealthResult<Key>;
  }
}

function checkDownOn(states: readonly DownState[]): readonly DownState[] {
  const wrong = Array.isArray(states) ? states.find((s) => !DOWN_STATES.includes(s)) : states;
  if (wrong !== undefined) {
    throw new PoolConfigError(
      'PoolHealthIndicator.isHealthy',
      'downOn',
      `must list pool states among ${DOWN_STATES.join(', ')}; got ${JSON.stringify(wrong)}`,
      'module',
    );
  }
  return states;
}

function report(s: PoolStats): PoolHealthDetails {
  const a = s.admission;
  const adaptive =
    a?.adaptive === undefined
      ? {}
      : {
          adaptive: {
            algorithm: a.adaptive.algorithm,
            shared: a.adaptive.shared,
            pausedMs: Math.ceil(a.adaptive.pausedMs),
            lastChange: lastChangeOf(a.adaptive.changes),
          },
        };
  const admission =
    a === undefined
      ? {}
      : {
          admission: {
            mode: a.mode,
            used: a.used,
            limit: a.limit === Infinity ? null : a.limit,
            utilization: round(a.utilization),
            ...adaptive,
            ...standingOf(a.standing),
            ...(a.classes === undefined
              ? {}
              : { classes: a.classes.map(({ name, used, waiting, refused }) => ({ name, used, waiting, refused })) }),
          },
        };
  return {
    health: s.health,
    size: s.size,
    ready: s.ready,
    maxSize: s.maxSize,
    clients: s.clients,
    clientLimit: s.clientLimit,
    utilization: round(s.utilization),
    waiting: s.waiting,
    lastError: s.lastError === undefined ? null : scrub(s.lastError),
    ...admission,
    ...standingOf(s.standing),
    ...(s.budget === undefined ? {} : { budget: { ...s.budget } }),
  };
}

/** A group's figures from its summary: a few reads a member, not a pool report each (a 10 000-member group's stats() takes 100 ms and more). */
function reportGroup(s: PoolGroupSummary): PoolHealthDetails {
  return {
    health: s.health,
    size: s.total,
    ready: s.ready,
    maxSize: s.maxTotal,
    clients: s.clients,
    clientLimit: s.clientLimit,
    utilization: round(s.utilization),
    waiting: s.waiting,
    lastError: s.lastError ?? null, // scrubbed by the summary
    members: s.memberCount,
  };
}

const round = (u: number) => Math.round(u * 1e4) / 1e4;

function missing(why: string): PoolHealthDetails {
  const zero = { size: 0, ready: 0, maxSize: 0, clients: 0, clientLimit: 0, utilization: 0, waiting: 0 };
  return { health: 'missing', ...zero, lastError: why };
}

function lastChangeOf(
  changes: readonly { from: number; to: number; reason: string }[],
): { from: number; to: number; reason: string } | null {
  const last = changes.at(-1);
  return last === undefined ? null : { from: last.from, to: last.to, reason: last.reason };
}
