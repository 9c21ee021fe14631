import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';

// Every decision runs in one script, atomically, on the server's clock (TIME), so instances with
// skewed clocks agree. Leases are sorted-set members scored by their expiry in server ms.

const PRELUDE = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- A new server run id (restart, failover, or a namespace never used) starts a quarantine of one
-- TTL, in which only holders re-register: Redis may have forgotten leases that are still held.
-- So does a gap longer than a TTL since any instance was last heard (a stall, a paused server, a
-- restore from an older snapshot, a failover to a lagging replica): leases may have lapsed here
-- while their holders, who could not be heard, still run.
-- The global set always holds one sentinel member, '~', scored +inf: if it is gone, the set was
-- deleted or evicted with the leases in it, which is a restart too. It is left out of every count.
local function sentinel_lost(g)
  if redis.call('ZSCORE', g, '~') then return false end
  redis.call('ZADD', g, 'inf', '~')
  return true
end
local function count(g)
  local n = redis.call('ZCARD', g)
  if n > 0 and redis.call('ZSCORE', g, '~') then return n - 1 end
  return n
end
-- run: the server's run_id as the caller's connection learned it ('' when its user may not run
-- INFO: the sentinel and the silence still tell a restart).
local function quiet_until(g, meta, now, ttl, protect, run)
  local lost = sentinel_lost(g)
  if protect ~= '1' then return 0 end
  local seen = tonumber(redis.call('HGET', meta, 'seen') or '0')
  redis.call('HSET', meta, 'seen', now)
  local moved = run ~= '' and redis.call('HGET', meta, 'run_id') ~= run
  if lost or moved or now - seen > ttl then
    if run ~= '' then redis.call('HSET', meta, 'run_id', run) end
    redis.call('HSET', meta, 'quiet_until', now + ttl)
    return now + ttl
  end
  return tonumber(redis.call('HGET', meta, 'quiet_until') or '0')
end
`;

/**
 * KEYS: global set, meta hash, key set (or the global set again when there is no key).
 * ARGV: lease id, ttl ms, global limit (-1: none), per-key limit (-1: none), protect ('1'/'0'), server run id ('' unknown).
 * Returns { 1, used } admitted; { -1, used } global limit; { -2, used } key limit; { -3, used, ms } quarantine.
 */
const ACQUIRE = `${PRELUDE}
local now = now_ms()
local ttl = tonumber(ARGV[2])
local quiet = quiet_until(KEYS[1], KEYS[2], now, ttl, ARGV[5], ARGV[6])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local used = count(KEYS[1])
if now < quiet then return { -3, used, quiet - now } end
local glimit = tonumber(ARGV[3])
if glimit >= 0 and used >= glimit then return { -1, used, 0 } end
if KEYS[3] ~= KEYS[1] then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  local klimit = tonumber(ARGV[4])
  if klimit >= 0 and redis.call('ZCARD', KEYS[3]) >= klimit then return { -2, used, 0 } end
  redis.call('ZADD', KEYS[3], now + ttl, ARGV[1])
  redis.call('PEXPIRE', KEYS[3], ttl * 2)
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
return { 1, used + 1, 0 }
`;

/**
 * KEYS: global set, key set (or the global set again). ARGV: lease id, channel.
 * Returns the leases left. Publishes so that waiting callers on every instance try again.
 */
const RELEASE = `${PRELUDE}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREM', KEYS[1], ARGV[1])
if KEYS[2] ~= KEYS[1] then redis.call('ZREM', KEYS[2], ARGV[1]) end
redis.call('PUBLISH', ARGV[2], '1')
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return count(KEYS[1])
`;

/**
 * KEYS: global set, meta hash, instances set, then one key set per lease (the global set when none).
 * ARGV: ttl ms, protect, instance id, server run id ('' unknown), then per lease: id, 'h' (held through Redis) or 'r' (register:
 * admitted while Redis was unreachable).
 * Refreshes every lease that is still there; re-adds those Redis forgot during a quarantine, and
 * those to register; reports the rest as lost.
 * Returns { used, live instances, quarantine ms left, lost ids... }.
 */
const HEARTBEAT = `${PRELUDE}
local now = now_ms()
local ttl = tonumber(ARGV[1])
local quiet = quiet_until(KEYS[1], KEYS[2], now, ttl, ARGV[2], ARGV[4])
redis.call('ZADD', KEYS[3], now + ttl, ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local lost = {}
for i = 4, #KEYS do
  local id = ARGV[5 + (i - 4) * 2]
  local mode = ARGV[6 + (i - 4) * 2]
  local score = redis.call('ZSCORE', KEYS[1], id)
  if (score and tonumber(score) > now) or now < quiet or mode == 'r' then
    redis.call('ZADD', KEYS[1], now + ttl, id)
    if KEYS[i] ~= KEYS[1] then
      redis.call('ZADD', KEYS[i], now + ttl, id)
      redis.call('PEXPIRE', KEYS[i], ttl * 2)
    end
  else
    redis.call('ZREM', KEYS[1], id)
    if KEYS[i] ~= KEYS[1] then redis.call('ZREM', KEYS[i], id) end
    lost[#lost + 1] = id
  end
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local reply = { count(KEYS[1]), redis.call('ZCARD', KEYS[3]), math.max(0, quiet - now) }
for _, id in ipairs(lost) do reply[#reply + 1] = id end
return reply
`;

/** A Lua script run by its SHA; reloaded when the server answers NOSCRIPT (after a restart or SCRIPT FLUSH). */
export class RedisScript {
  readonly #sha: string;

  constructor(readonly source: string) {
    this.#sha = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: Redis, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.#sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

export const acquireScript = new RedisScript(ACQUIRE);
export const releaseScript = new RedisScript(RELEASE);
export const heartbeatScript = new RedisScript(HEARTBEAT);
