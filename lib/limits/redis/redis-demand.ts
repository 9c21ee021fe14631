import { demandScript, type RedisKeys } from './redis-scripts.js';
import { withTimeout, type Client } from './redis-client.js';

/** An instance as the exchange heard it. */
export interface HeardInstance {
  /** Its figures as it last wrote them. */
  readonly figures: string;
  /** Its places (live leases) in Redis at the moment of the exchange. */
  readonly places: number;
}

/**
 * Where the instances of a fleet budget trade their demand, beside the budget's places: each
 * instance writes its figures (an opaque string of words) and reads every other instance's heard
 * within `staleMs`, in one atomic call dated on the server's clock (instances' clocks may differ).
 */
export class RedisDemand {
  constructor(
    readonly redis: () => Client | undefined,
    readonly keys: RedisKeys,
    /** This instance's id: its leases' (see RedisLeases). */
    readonly instance: string,
    readonly timeoutMs: number,
  ) {}

  /**
   * Writes this instance's `figures` ('': it leaves the exchange) and returns every instance's
   * heard within `staleMs`, this one's included, with its places counted in the same moment.
   * Throws when Redis fails or is not connected.
   */
  async exchange(figures: string, staleMs: number): Promise<Map<string, HeardInstance>> {
    const redis = this.redis();
    if (redis === undefined || redis.status !== 'ready') throw new Error('Redis is not connected');
    const reply = (await withTimeout(
      demandScript.run(redis, [this.keys.demand, this.keys.global], [this.instance, figures, Math.ceil(staleMs)]),
      this.timeoutMs,
      'the demand exchange',
    )) as (string | number)[];
    const fleet = new Map<string, HeardInstance>();
    for (let i = 0; i + 2 < reply.length; i += 3)
      fleet.set(String(reply[i]), { figures: String(reply[i + 1]), places: Number(reply[i + 2]) });
    return fleet;
  }
}
