import {
  type AdaptiveAlgorithmOptions,
  AdaptiveLimiter,
  type AdaptiveLimiterOptions,
  type ConcurrencyLimiter,
  type LimitOptions,
  LocalLimiter,
  RedisLimiter,
  type RedisLimitOptions,
} from '../limits/index.js';
import { PoolConfigError } from '../core/index.js';
import { NestPoolLogger } from './nest-pool-logger.js';

/**
 * Admission limits as the module takes them: settings (Redis when `redis` is set; an adaptive
 * limit, which finds `global` by itself, when `adaptive` is set), or a limiter you made.
 */
export type LimitsConfig =
  | (Omit<LimitOptions, 'clock' | 'logger' | 'name'> & {
      redis?: RedisLimitOptions;
      /** An adaptive global limit (`AdaptiveLimiter`): `true` for the default algorithm, or the algorithm and its bounds. Not with `global`. */
      adaptive?: true | AdaptiveAlgorithmOptions;
      /** With `adaptive`: tells overload from success (default `classifyCall`). */
      classify?: AdaptiveLimiterOptions['classify'];
      /** With `adaptive`: the longest pause a `Retry-After` may ask for, ms (default 30 000). */
      maxPauseMs?: number;
      /** With `adaptive`: while paused, one probe call this often, ms (default 1 000). */
      pauseProbeMs?: number;
    })
  | ConcurrencyLimiter;

function isLimiter(config: LimitsConfig): config is ConcurrencyLimiter {
  return typeof (config as ConcurrencyLimiter).admit === 'function';
}

/** Builds a limiter from settings (Redis when `redis` is set, adaptive when `adaptive` is); a limiter you made is used as is. */
export function makeLimiter(config: LimitsConfig, name: string): ConcurrencyLimiter {
  if (isLimiter(config)) return config;
  const { redis, adaptive, classify, maxPauseMs, pauseProbeMs, ...limits } = config;
  const logger = new NestPoolLogger(name);
  if (adaptive !== undefined && (adaptive as unknown) !== false) {
    const pause = {
      ...(maxPauseMs === undefined ? {} : { maxPauseMs }),
      ...(pauseProbeMs === undefined ? {} : { pauseProbeMs }),
    };
    return new AdaptiveLimiter({
      ...limits,
      ...pause,
      name,
      logger,
      ...(adaptive === true ? {} : { adaptive }),
      ...(classify === undefined ? {} : { classify }),
      ...(redis === undefined ? {} : { redis }),
    });
  }
  const adaptiveOnly = Object.entries({ classify, maxPauseMs, pauseProbeMs }).find(([, v]) => v !== undefined)?.[0];
  if (adaptiveOnly !== undefined)
    throw new PoolConfigError(
      name,
      `limits.${adaptiveOnly}`,
      'is for an adaptive limit: set limits.adaptive (true, or the algorithm and its bounds) too',
      'limiter',
    );
  return redis === undefined
    ? new LocalLimiter({ ...limits, name, logger })
    : new RedisLimiter({ ...limits, name, logger, redis });
}

/**
 * The limiters of one `PoolModule` import: the shared one and each pool's own, each started when
 * the first pool that uses it is made (so pools a test overrode start none). It closes those it made.
 */
export class ModuleLimiters {
  readonly #made: ConcurrencyLimiter[] = [];
  #shared: Promise<ConcurrencyLimiter> | undefined;

  constructor(private readonly settings: { readonly limits?: LimitsConfig }) {}

  /** The limiter of pool `name`: its own if configured, else the shared one, if any. */
  async forPool(name: string, config: LimitsConfig | undefined): Promise<ConcurrencyLimiter | undefined> {
    if (config !== undefined) return this.#start(config, `${name}:limits`);
    const shared = this.settings.limits;
    if (shared === undefined) return undefined;
    return (this.#shared ??= this.#start(shared, 'limits'));
  }

  async close(): Promise<void> {
    await Promise.all(this.#made.splice(0).map((l) => l.close()));
  }

  async #start(config: LimitsConfig, name: string): Promise<ConcurrencyLimiter> {
    const limiter = makeLimiter(config, name);
    if (limiter !== config) {
      this.#made.push(limiter);
      await limiter.start();
    }
    return limiter;
  }
}
