import { Injectable } from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { HealthIndicatorService, type HealthIndicatorResult } from '@nestjs/terminus';
import type { PoolHealth, PoolStats } from '../core/index.js';
import { poolDirectory } from './pool-directory.js';

/** Options of {@link PoolHealthIndicator.isHealthy}. */
export interface PoolHealthCheckOptions {
  /** The pools to report. Default: every pool of the application. */
  pools?: readonly string[];
}

/** What the health check reports for one pool. */
export interface PoolHealthDetails {
  /** The pool's health, or `missing` for a name in `pools` that no pool has. */
  health: PoolHealth | 'missing';
  size: number;
  ready: number;
  maxSize: number;
  clients: number;
  clientLimit: number;
  /** Clients / (maxSize × clientLimit), to 4 decimals. */
  utilization: number;
  waiting: number;
  lastError: string | null;
  /** The pool's admission limiter, when it has one. */
  admission?: { mode: string; used: number; limit: number | null; utilization: number };
}

type Status = 'up' | 'degraded' | 'down';
const STATUS: Record<PoolHealthDetails['health'], Status> = {
  healthy: 'up',
  degraded: 'degraded',
  critical: 'degraded',
  exhausted: 'down',
  failing: 'down',
  missing: 'down',
};
const RANK: Record<Status, number> = { up: 0, degraded: 1, down: 2 };
const worse = (a: Status, b: Status): Status => (RANK[b] > RANK[a] ? b : a);
/** Limits that are only approximate (Redis away, or re-registering) degrade; refusing everything is down. */
const ADMISSION_STATUS: Record<string, Status> = { quarantine: 'degraded', unreachable: 'degraded', fallback: 'degraded', 'fail-closed': 'down' };

/**
 * Terminus health indicator of the pools: `healthy` is up, `degraded` and `critical` are
 * degraded (still serving), `exhausted` and `failing` are down. A limiter that is not sharing its
 * limits through Redis right now (quarantine, unreachable, fallback) makes it degraded, one that
 * fails closed down. The worst pool sets the status.
 *
 * ```ts
 * this.health.check([() => this.pools.isHealthy('pools')]);
 * ```
 */
@Injectable()
export class PoolHealthIndicator {
  constructor(
    private readonly indicators: HealthIndicatorService,
    private readonly app: ModulesContainer,
  ) {}

  isHealthy<const Key extends string>(key: Key, options: PoolHealthCheckOptions = {}): HealthIndicatorResult<Key> {
    const pools = poolDirectory.ofApp(this.app);
    const names = options.pools ?? pools.map((p) => p.name);
    const details: Record<string, PoolHealthDetails> = {};
    let status: Status = 'up';
    for (const name of names) {
      const pool = pools.find((p) => p.name === name);
      const row = pool === undefined ? missing(name) : report(pool.stats());
      details[name] = row;
      const rowStatus = worse(STATUS[row.health], row.admission === undefined ? 'up' : ADMISSION_STATUS[row.admission.mode] ?? 'up');
      status = worse(status, rowStatus);
    }
    const session = this.indicators.check(key);
    if (status === 'up') return session.up(details);
    if (status === 'degraded') return session.degraded(details);
    return session.down(details);
  }
}

function report(s: PoolStats): PoolHealthDetails {
  const a = s.admission;
  const admission = a === undefined ? {} : { admission: { mode: a.mode, used: a.used, limit: a.limit === Infinity ? null : a.limit, utilization: round(a.utilization) } };
  return {
    health: s.health,
    size: s.size,
    ready: s.ready,
    maxSize: s.maxSize,
    clients: s.clients,
    clientLimit: s.clientLimit,
    utilization: round(s.utilization),
    waiting: s.waiting,
    lastError: s.lastError ?? null,
    ...admission,
  };
}

const round = (u: number) => Math.round(u * 1e4) / 1e4;

function missing(name: string): PoolHealthDetails {
  const zero = { size: 0, ready: 0, maxSize: 0, clients: 0, clientLimit: 0, utilization: 0, waiting: 0 };
  return { health: 'missing', ...zero, lastError: `no pool named "${name}" in this application` };
}
