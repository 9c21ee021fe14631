import type { PoolHealth } from './health.js';
import type { PoolLogger } from './logger.js';
import { events } from './pool-events.js';
import type { HealthFigures } from './pool-report.js';

/** Worse states rank higher. */
const RANK: Record<PoolHealth, number> = { healthy: 0, degraded: 1, critical: 2, exhausted: 3, failing: 4 };

const percent = (u: number) => `${Math.round(u * 100)} %`;
const count = (n: number, what: string) => `${n} ${what}${n === 1 ? '' : 's'}`;

/**
 * A pool's health over time, as its house-keeper samples it: each change is logged once (warn
 * when worse, info when better) with the figures that caused it, and published on the health
 * channel. Never once per acquire: the sample is taken every `reapIntervalMs`.
 */
export class HealthWatch {
  #last: PoolHealth = 'healthy';

  constructor(
    readonly pool: string,
    readonly logger: PoolLogger,
  ) {}

  get last(): PoolHealth {
    return this.#last;
  }

  /** Takes the pool's health now; logs and publishes it if it changed. */
  sample(stats: HealthFigures): void {
    const from = this.#last;
    const to = stats.health;
    if (to === from) return;
    this.#last = to;
    const figures =
      to === 'failing'
        ? `no connection is ready and creates fail: ${stats.lastError ?? 'no error recorded'}`
        : `utilization ${percent(stats.utilization)}, ${count(stats.clients, 'caller')} on ${stats.ready} of ${count(stats.maxSize, 'connection')}, ${stats.waiting} waiting`;
    const line = `pool "${this.pool}": health ${from} → ${to} (${figures})`;
    if (RANK[to] > RANK[from]) this.logger.warn(line);
    else (this.logger.info ?? this.logger.warn).call(this.logger, line);
    if (events.health.hasSubscribers) events.health.publish({ pool: this.pool, from, to, utilization: stats.utilization, waiting: stats.waiting });
  }
}
