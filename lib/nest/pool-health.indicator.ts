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

/**
 * Terminus health indicator of the pools: `healthy` is up, `degraded` and `critical` are
 * degraded (still serving), `exhausted` and `failing` are down. The worst pool sets the status.
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
      if (RANK[STATUS[row.health]] > RANK[status]) status = STATUS[row.health];
    }
    const session = this.indicators.check(key);
    if (status === 'up') return session.up(details);
    if (status === 'degraded') return session.degraded(details);
    return session.down(details);
  }
}

function report(s: PoolStats): PoolHealthDetails {
  return {
    health: s.health,
    size: s.size,
    ready: s.ready,
    maxSize: s.maxSize,
    clients: s.clients,
    clientLimit: s.clientLimit,
    utilization: Math.round(s.utilization * 1e4) / 1e4,
    waiting: s.waiting,
    lastError: s.lastError ?? null,
  };
}

function missing(name: string): PoolHealthDetails {
  const zero = { size: 0, ready: 0, maxSize: 0, clients: 0, clientLimit: 0, utilization: 0, waiting: 0 };
  return { health: 'missing', ...zero, lastError: `no pool named "${name}" in this application` };
}
