// What a pool tells anyone listening on `node:diagnostics_channel` (APM agents, your own
// subscriber), as undici does: the life of each connection, leases, health changes and closes,
// and a tracing channel around every acquire. A message is built only while its channel has a
// subscriber, so the pool pays one property read per event when nobody listens.
import { channel, tracingChannel } from 'node:diagnostics_channel';
import type { PoolHealth, RetireReason } from '../contracts/index.js';

/** The channels' names: subscribe with `diagnostics_channel.subscribe(name, fn)`. */
export const POOL_CHANNELS = {
  /** `{ pool, connectionId }`: a create starts. */
  createStart: 'nestjs-shared-pool:connection:create-start',
  /** `{ pool, connectionId, durationMs }`: a connection is open and ready. */
  createEnd: 'nestjs-shared-pool:connection:create-end',
  /** `{ pool, connectionId, error, durationMs }`: a create (or its readiness check) failed or timed out. */
  createFailure: 'nestjs-shared-pool:connection:create-failure',
  /** `{ pool, connectionId, clients }`: a caller got a connection (`clients`: its callers now, this one included). */
  acquire: 'nestjs-shared-pool:lease:acquire',
  /** `{ pool, connectionId, failed }`: a caller gave its connection back (`failed`: with `lease.fail()`). */
  release: 'nestjs-shared-pool:lease:release',
  /** `{ pool, connectionId, reason, detail }`: a connection is taken out of service (see `RetireReason`). */
  retire: 'nestjs-shared-pool:connection:retire',
  /** `{ pool, connectionId }`: a connection finished closing. */
  close: 'nestjs-shared-pool:connection:close',
  /** `{ pool, from, to, utilization, waiting }`: the pool's health changed. */
  health: 'nestjs-shared-pool:pool:health',
  /** `{ pool }`: `pool.close()` was called. */
  poolClose: 'nestjs-shared-pool:pool:close',
  /** `{ limiter, from, to }`: an admission limiter's mode changed (Redis reachable, quarantine, fallback...). */
  limiterMode: 'nestjs-shared-pool:limiter:mode',
  /** `{ limiter, from, to, reason }`: an adaptive limiter moved its limit (`reason`: `overload` or `success`). */
  limiterLimit: 'nestjs-shared-pool:limiter:limit',
  /**
   * Tracing channel (`diagnostics_channel.tracingChannel(name)`) around every acquire: its
   * `start`, `end`, `asyncStart`, `asyncEnd` and `error` events carry `{ pool, timeoutMs, key }`,
   * with `result` (the lease) or `error` added as the acquire settles.
   */
  acquireTrace: 'nestjs-shared-pool:acquire',
} as const;

export interface CreateStartMessage {
  readonly pool: string;
  readonly connectionId: number;
}
export interface CreateEndMessage extends CreateStartMessage {
  readonly durationMs: number;
}
export interface CreateFailureMessage extends CreateEndMessage {
  readonly error: unknown;
}
export interface AcquireMessage extends CreateStartMessage {
  readonly clients: number;
}
export interface ReleaseMessage extends CreateStartMessage {
  readonly failed: boolean;
}
export interface RetireMessage extends CreateStartMessage {
  readonly reason: RetireReason;
  readonly detail: string;
}
export interface HealthMessage {
  readonly pool: string;
  readonly from: PoolHealth;
  readonly to: PoolHealth;
  readonly utilization: number;
  readonly waiting: number;
}
export interface LimiterLimitMessage {
  readonly limiter: string;
  readonly from: number;
  readonly to: number;
  readonly reason: 'overload' | 'success';
}
/** The context of the acquire tracing channel. */
export interface AcquireTraceContext {
  readonly pool: string;
  readonly timeoutMs: number | undefined;
  readonly key: string | null | undefined;
  result?: unknown;
  error?: unknown;
}

/** @internal The channels, made once. */
export const events = {
  createStart: channel(POOL_CHANNELS.createStart),
  createEnd: channel(POOL_CHANNELS.createEnd),
  createFailure: channel(POOL_CHANNELS.createFailure),
  acquire: channel(POOL_CHANNELS.acquire),
  release: channel(POOL_CHANNELS.release),
  retire: channel(POOL_CHANNELS.retire),
  close: channel(POOL_CHANNELS.close),
  health: channel(POOL_CHANNELS.health),
  poolClose: channel(POOL_CHANNELS.poolClose),
  limiterMode: channel(POOL_CHANNELS.limiterMode),
  limiterLimit: channel(POOL_CHANNELS.limiterLimit),
  // Both type parameters the context: @types/node 26 swapped their order (context first, then the
  // store), and a type that fits either order compiles against every @types/node.
  acquireTrace: tracingChannel<AcquireTraceContext, AcquireTraceContext>(POOL_CHANNELS.acquireTrace),
};
