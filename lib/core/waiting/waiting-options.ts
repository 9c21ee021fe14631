import { is, keysOf, type OptionReader } from '../common/index.js';

/** How a queue of callers waits: the options a pool and every limiter take as `waiting`. */
export interface WaitingOptions {
  /**
   * `'controlled'`: a standing queue is shed (see above); `'fifo'`: callers wait until their
   * deadline whatever the queue ahead (what pg-pool, HikariCP, generic-pool and tarn do). Default:
   * `'controlled'` for an adaptive limiter, `'fifo'` for a pool's queue and a fixed limit.
   */
  mode?: 'controlled' | 'fifo';
  /**
   * The wait a served caller should not exceed for long, ms. Default: what the queue measures,
   * the mean time a slot is held (the slots over the rate the queue is served at), once the queue
   * has stood long enough to measure it; until then nothing is shed.
   */
  targetMs?: number;
  /**
   * How long the shortest wait must stay above the target before the queue counts as standing,
   * ms: a burst that drains within it is absorbed; and how long a standing queue must stay
   * drained before it is let be. Default: 5 × the target, and at least 1 s (CoDel's 100 ms is a
   * network's round trip; callers here have deadlines of seconds, and a cold limit may keep a
   * queue for its first second while it grows).
   */
  intervalMs?: number;
}

/** `waiting` after defaults. */
export interface ResolvedWaiting {
  readonly mode: 'controlled' | 'fifo';
  readonly targetMs?: number;
  readonly intervalMs?: number;
}

const WAITING_KEYS = keysOf<WaitingOptions>({ mode: true, targetMs: true, intervalMs: true });

/**
 * Reads the `waiting` options of a pool or a limiter (`mode` defaulting to `defaultMode`); a bad
 * field throws a PoolConfigError naming it (`limits.waiting.mode`).
 */
export function resolveWaiting<O extends { waiting?: WaitingOptions }>(
  read: OptionReader<O>,
  defaultMode: ResolvedWaiting['mode'],
): ResolvedWaiting {
  const w = read.nested('waiting' as keyof O & string) as unknown as OptionReader<WaitingOptions>;
  w.only(WAITING_KEYS, 'the waiting options');
  const mode = w.get('mode', is.oneOf('controlled', 'fifo'), defaultMode);
  const targetMs = w.get('targetMs', is.finiteAbove(0));
  const intervalMs = w.get('intervalMs', is.finiteAbove(0));
  return {
    mode,
    ...(targetMs === undefined ? {} : { targetMs }),
    ...(intervalMs === undefined ? {} : { intervalMs }),
  };
}
