import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { CLASSES } from './class-scripts.js';

// Every decision runs in one script, atomically, on the server's clock (TIME), so instances with
// skewed clocks agree. Leases are sorted-set members scored by their expiry in server ms.
// Each redis.call() inside a script costs about as much as the command itself again, so the
// admission makes as few as it can: expired leases are not removed there but left out of the
// counts (ZCOUNT above now); the heartbeat removes them.

const PRELUDE = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- The global set always holds one sentinel member, '~', scored +inf, so counting its members above
-- now gives the live leases plus one. A count of 0 means the set was deleted or evicted with the
-- leases in it, which is a restart: the sentinel is put back and the caller told.
local function live_leases(g, now)
  local n = redis.call('ZCOUNT', g, '(' .. now, '+inf')
  if n > 0 then return n - 1, false end
  redis.call('ZADD', g, 'inf', '~')
  return 0, true
end
-- A new server run id (restart, failover, or a namespace never used) starts a quarantine of one
-- TTL, in which only holders re-register: Redis may have forgotten leases that are still held.
-- So does a lost sentinel, and a gap longer than a TTL since any instance was last heard (a stall,
-- a paused server, a restore from an older snapshot, a failover to a lagging replica): leases may
-- have lapsed here while their holders, who could not be heard, still run.
-- run: the server's run_id as the caller's connection learned it ('' when its user may not run
-- INFO: the sentinel and the silence still tell a restart). 'seen' is written by every heartbeat,
-- and by an admission only when it is older than 2 % of the TTL: a write per interval, not per lease.
local function quiet_until(meta, now, ttl, lost, run, beat)
  local m = redis.call('HMGET', meta, 'seen', 'run_id', 'quiet_until')
  local seen = tonumber(m[1]) or 0
  if lost or (run ~= '' and m[2] ~= run) or now - seen > ttl then
    if run ~= '' then redis.call('HSET', meta, 'run_id', run) end
    redis.call('HSET', meta, 'seen', now, 'quiet_until', now + ttl)
    return now + ttl
  end
  if beat or now - seen > ttl / 50 then redis.call('HSET', meta, 'seen', now) end
  return tonumber(m[3]) or 0
end
${CLASSES}
-- An adaptive limit shared by every instance (see shared-limit.ts): its estimate, fractional, is
-- 'alimit' in the meta hash, moved by what a caller reports with its call. spec: 'seed min max
-- backoff delta cut pause'. seed: the estimate when the hash has none (the caller's last seen,
-- so a restart that lost the hash never raises the limit). delta: what the caller's successes
-- (or latency windows) moved it by. cut: the highest fencing token among the caller's overloads
-- (-1: one admitted without Redis; 0: none); it cuts by backoff once per round, where a round
-- ends at each cut: an overload of a lease admitted before the last cut (fence at most 'acut')
-- does not cut again, from whichever instance it comes. pause: ms the upstream asked for
-- (Retry-After); no instance admits until then ('apause'); -1: a probe through the pause
-- succeeded, the pause ends for every instance; -2: this call is a probe (admitted through a
-- pause, see ACQUIRE). deadline: the server time (ms) after
-- which the caller has given up on this call (its command timeout; 0: not known yet): a call that
-- Redis runs later, after a stall, brings no growth, so a fault never raises the limit. probe:
-- ms the caller asks every instance to pin the limit for, to measure the latency without a queue
-- (0: none); a probe begins unless one runs or ended less than that long ago ('aprobe': until when).
-- floor: the latency without a queue the caller's last probe measured, ms (0: none), kept as the
-- fleet's ('afloor') for instances that start later.
-- Returns the estimate, the ms of pause left, the ms of probe left, the pin (3, or min), the floor × 1000.
local function adapt(meta, spec, now)
  local seed, min, max, backoff, delta, cut, pause, deadline, probe, floor = string.match(spec, '^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+) (%S+)$')
  local m = redis.call('HMGET', meta, 'alimit', 'acut', 'apause', 'fence', 'aprobe', 'afloor')
  local was = tonumber(m[1])
  delta = tonumber(delta)
  deadline = tonumber(deadline)
  if delta > 0 and deadline > 0 and now > deadline then delta = 0 end
  local e = (was or tonumber(seed)) + delta
  cut = tonumber(cut)
  if cut < 0 or (cut > 0 and cut > (tonumber(m[2]) or 0)) then
    e = e * tonumber(backoff)
    redis.call('HSET', meta, 'acut', m[4] or '0')
  end
  e = math.min(tonumber(max), math.max(tonumber(min), e))
  if e ~= was then redis.call('HSET', meta, 'alimit', string.format('%.6f', e)) end
  local paused = tonumber(m[3]) or 0
  pause = tonumber(pause)
  if pause == -1 and paused > 0 then
    paused = 0
    redis.call('HDEL', meta, 'apause')
  elseif pause > 0 and now + pause > paused then
    paused = now + pause
    redis.call('HSET', meta, 'apause', paused)
  end
  local probing = tonumber(m[5]) or 0
  probe = tonumber(probe)
  if probe > 0 and now >= probing + probe then
    probing = now + probe
    redis.call('HSET', meta, 'aprobe', probing)
  end
  local fleet_floor = tonumber(m[6]) or 0
  if tonumber(floor) > 0 then
    fleet_floor = tonumber(floor)
    redis.call('HSET', meta, 'afloor', floor)
  end
  return e, math.max(0, paused - now), math.max(0, probing - now), math.max(3, tonumber(min)), math.floor(fleet_floor * 1000)
end
`;

// A keyed lease's member names its key set after a '|' (the set's name less the namespace's
// prefix), so that whoever removes it from the global set when it expires removes it from its key
// set too: key sets need no TTL of their own, and the admission no call to refresh one.

/**
 * Admits a batch: the admissions asked for while the previous call was on its way, in order.
 * KEYS: global set, meta hash, then one key set per admission (the global set when it has no key).
 * ARGV: ttl ms, global limit (-1: none), per-key limit (-1: none; 'each': each admission's follows
 * its member), protect ('1'/'0'), server run id ('' unknown), the adaptive spec ('' for a fixed
 * limit; see adapt()), the priority classes (see class_counts(): the class-set prefix, '' for
 * none, the demand set, the instance, its mask, the shares joined by ',', and the ms after which
 * the instance's demand lapses unless a call renews it), then one lease member
 * per admission (with 'each', a member then its key's limit, -1: none).
 * Returns { used, quarantine ms left, then per admission: its fencing token (> 0) when admitted, -1
 * global limit, -2 key limit, -3 quarantine, -4 paused (Retry-After), -5 the free slots are held
 * for classes under their guarantee }, then with an adaptive spec
 * the estimate × 1000, the ms of pause left, the server's time (ms), the ms of probe left (the
 * limit pinned at 3, or min, meanwhile) and the fleet's floor (ms × 1000; 0: none).
 * Fencing tokens grow with every admission of the namespace, across every instance: each is one
 * more than the last (kept in the meta hash), and at least the server's time in µs-sized steps
 * (now ms × 1000), so they keep growing through a restart that lost the hash or a failover.
 */
const ACQUIRE = `${PRELUDE}
local g = KEYS[1]
local now = now_ms()
local ttl = tonumber(ARGV[1])
local used, lost = live_leases(g, now)
local reply = { used, 0 }
local glimit = tonumber(ARGV[2])
local paused = 0
if ARGV[6] ~= '' then
  local estimate, probing, pin, floor
  estimate, paused, probing, pin, floor = adapt(KEYS[2], ARGV[6], now)
  glimit = math.floor(estimate)
  if probing > 0 then glimit = math.min(glimit, pin) end
  reply[#KEYS + 1] = math.floor(estimate * 1000)
  reply[#KEYS + 2] = paused
  reply[#KEYS + 3] = now
  reply[#KEYS + 4] = probing
  reply[#KEYS + 5] = floor
end
if ARGV[4] == '1' then
  local quiet = quiet_until(KEYS[2], now, ttl, lost, ARGV[5], false)
  if now < quiet then
    reply[2] = quiet - now
    for i = 3, #KEYS do reply[i] = -3 end
    return reply
  end
end
-- A probe (pause field -2, sent alone) goes through the pause to find whether it may end.
if paused > 0 and string.match(ARGV[6], '^%S+ %S+ %S+ %S+ %S+ %S+ (%S+)') ~= '-2' then
  for i = 3, #KEYS do reply[i] = -4 end
  return reply
end
local each = ARGV[3] == 'each'
local klimit = tonumber(ARGV[3])
local expiry = now + ttl
local since = '(' .. now
local admitted = {}
local fence = nil
local lapse = now + (tonumber(ARGV[12]) or 0)
local classes = class_counts(ARGV[7], ARGV[8], ARGV[9], ARGV[10], ARGV[11], glimit, now, lapse)
for i = 3, #KEYS do
  local k = KEYS[i]
  local member
  if each then
    member = ARGV[2 * i + 7]
    klimit = tonumber(ARGV[2 * i + 8])
  else
    member = ARGV[i + 10]
  end
  local c = classes and class_of(member)
  if c and not classes[c + 1] then c = nil end -- an instance with more classes than this one: none
  if glimit >= 0 and used >= glimit then
    reply[i] = -1
  elseif k ~= g and klimit >= 0 and redis.call('ZCOUNT', k, since, '+inf') >= klimit then
    reply[i] = -2
  elseif c and yields(classes, c, used, glimit) then
    reply[i] = -5
  else
    if k ~= g then redis.call('ZADD', k, expiry, member) end
    if c then
      redis.call('ZADD', ARGV[7] .. c, expiry, member)
      classes[c + 1].used = classes[c + 1].used + 1
    end
    admitted[#admitted + 1] = expiry
    admitted[#admitted + 1] = member
    used = used + 1
    if fence == nil then fence = math.max(tonumber(redis.call('HGET', KEYS[2], 'fence')) or 0, now * 1000) end
    fence = fence + 1
    reply[i] = fence
  end
  -- Refused by the global limit, a caller of a class waits (a class is served only from a queue): its demand is known at once.
  if c and (reply[i] == -1 or reply[i] == -5) and not classes[c + 1].waits then
    classes[c + 1].waits = true
    redis.call('ZADD', ARGV[8], lapse, c .. ':' .. ARGV[9])
  end
end
if #admitted > 0 then
  redis.call('ZADD', g, unpack(admitted))
  redis.call('HSET', KEYS[2], 'fence', string.format('%.0f', fence))
end
reply[1] = used
return reply
`;

/**
 * KEYS: global set, meta hash, instances set.
 * ARGV: ttl ms, protect, instance id, server run id ('' unknown), first ('1': the first call of a
 * heartbeat, which registers the instance and removes expired leases), key-set prefix, then one
 * letter per lease ('h': held through Redis; 'r': register, admitted while Redis was unreachable),
 * the adaptive spec ('' for none; see adapt()), the class-set prefix ('' without priority classes),
 * the demand set, this instance's mask and its lapse (see ACQUIRE), then the leases' members. A member names its key set (see above): the key sets are not passed
 * as KEYS, which would cost Redis a key lookup each and the script a table.
 * Refreshes every lease that is still there; re-adds those Redis forgot during a quarantine, and
 * those to register; reports the rest as lost. A heartbeat of many leases is several calls, so
 * that none blocks Redis for long.
 * Returns { used, live instances, quarantine ms left, the adaptive estimate × 1000 (-1 with no
 * spec), ms of pause left, the server's time (ms), ms of probe left, the fleet's floor × 1000, lost members... }.
 */
const HEARTBEAT = `${PRELUDE}
local g = KEYS[1]
local now = now_ms()
local ttl = tonumber(ARGV[1])
local first = ARGV[5] == '1'
local prefix = ARGV[6]
local cprefix = ARGV[9]
local function out_of_sets(member, key)
  if key then redis.call('ZREM', prefix .. key, member) end
  local c = cprefix ~= '' and class_of(member)
  if c then redis.call('ZREM', cprefix .. c, member) end
end
local _, lost_set = live_leases(g, now)
local quiet = 0
if ARGV[2] == '1' then quiet = quiet_until(KEYS[2], now, ttl, lost_set, ARGV[4], first) end
if first then
  redis.call('ZADD', KEYS[3], now + ttl, ARGV[3])
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  -- Expired leases (of crashed holders) out of their key sets, then out of the global set.
  -- At most 500 a call, so that a crash of many holders does not block Redis; the rest next time.
  local expired = redis.call('ZRANGE', g, '-inf', now, 'BYSCORE', 'LIMIT', 0, 500)
  for _, member in ipairs(expired) do out_of_sets(member, string.match(member, '|(.*)$')) end
  if #expired > 0 then redis.call('ZREM', g, unpack(expired)) end
  if cprefix ~= '' then
    local mask = ARGV[11]
    for c = 0, #mask - 1 do
      local field = c .. ':' .. ARGV[3]
      if string.byte(mask, c + 1) == 49 then redis.call('ZADD', ARGV[10], now + tonumber(ARGV[12]), field) else redis.call('ZREM', ARGV[10], field) end
    end
    redis.call('ZREMRANGEBYSCORE', ARGV[10], '-inf', now)
  end
end
-- The leases' scores in one call, and the refreshed ones written back in one call per set.
local modes = ARGV[7]
local estimate, paused, probing, floor = -1, 0, 0, 0
if ARGV[8] ~= '' then
  local _
  estimate, paused, probing, _, floor = adapt(KEYS[2], ARGV[8], now)
  estimate = math.floor(estimate * 1000)
end
local lost = {}
if #ARGV > 12 then
  local scores = redis.call('ZMSCORE', g, unpack(ARGV, 13))
  local expiry = now + ttl
  local refresh = {}
  local by_set = {}
  local function refresh_in(set, member)
    local t = by_set[set]
    if not t then
      t = {}
      by_set[set] = t
    end
    t[#t + 1] = expiry
    t[#t + 1] = member
  end
  for j = 1, #ARGV - 12 do
    local member = ARGV[j + 12]
    local score = scores[j]
    local key = string.match(member, '|(.*)$')
    if (score and tonumber(score) > now) or now < quiet or string.byte(modes, j) == 114 then -- 'r'
      refresh[#refresh + 1] = expiry
      refresh[#refresh + 1] = member
      if key then refresh_in(prefix .. key, member) end
      local c = cprefix ~= '' and class_of(member)
      if c then refresh_in(cprefix .. c, member) end
    else
      if score then redis.call('ZREM', g, member) end
      out_of_sets(member, key)
      lost[#lost + 1] = member
    end
  end
  if #refresh > 0 then redis.call('ZADD', g, unpack(refresh)) end
  for set, t in pairs(by_set) do redis.call('ZADD', set, unpack(t)) end
end
local reply = { redis.call('ZCOUNT', g, '(' .. now, '+inf') - 1, redis.call('ZCARD', KEYS[3]), math.max(0, quiet - now), estimate, paused, now, probing, floor }
for _, member in ipairs(lost) do reply[#reply + 1] = member end
return reply
`;

/**
 * KEYS: the demand hash, the global set. ARGV: instance id, its figures ('': it leaves), ms after
 * which an instance's figures are stale. Writes the instance's figures, dated on the server's
 * clock, drops stale ones, and returns { instance, figures, places, ... } of every instance heard
 * within that time, where places counts the instance's live leases (their ids start with its id):
 * one reading of every instance's places at one moment, so they never add up past the budget, as
 * figures each instance published at its own moment may while places move.
 */
const DEMAND = `${PRELUDE}
local now = now_ms()
local stale = tonumber(ARGV[3])
if ARGV[2] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], now .. ' ' .. ARGV[2])
  redis.call('PEXPIRE', KEYS[1], stale * 4)
end
local places = {}
for _, lease in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '(' .. now, '+inf')) do
  local holder = string.match(lease, '^(.-):')
  if holder then places[holder] = (places[holder] or 0) + 1 end
end
local all = redis.call('HGETALL', KEYS[1])
local out = {}
for i = 1, #all, 2 do
  local at, figures = string.match(all[i + 1], '^(%S+) (.*)$')
  if not at or now - tonumber(at) > stale then
    redis.call('HDEL', KEYS[1], all[i])
  else
    out[#out + 1] = all[i]
    out[#out + 1] = figures
    out[#out + 1] = places[all[i]] or 0
  end
end
return out
`;

/**
 * The names of a namespace's keys. Every name carries the namespace as a hash tag, so a namespace
 * lives on one slot of a Redis Cluster: `{ns}:g` (the global set), `{ns}:k:<key>` (a key's set),
 * `{ns}:c:<index>` (a priority class's set), `{ns}:cw` (the classes with callers waiting),
 * `{ns}:meta`, `{ns}:i` (instances), `{ns}:demand` (a fleet budget's instances' demand), and the
 * `{ns}:released` channel.
 */
export class RedisKeys {
  readonly global: string;
  readonly keySetPrefix: string;
  readonly classSetPrefix: string;
  readonly classDemand: string;
  readonly meta: string;
  readonly instances: string;
  readonly demand: string;
  readonly channel: string;

  constructor(namespace: string) {
    const tag = `{${namespace}}`;
    this.global = `${tag}:g`;
    this.keySetPrefix = `${tag}:k:`;
    this.classSetPrefix = `${tag}:c:`;
    this.classDemand = `${tag}:cw`;
    this.meta = `${tag}:meta`;
    this.instances = `${tag}:i`;
    this.demand = `${tag}:demand`;
    this.channel = `${tag}:released`;
  }
}

/** Keys longer than this are hashed (SHA-1) in Redis key names: they are sent on every call and heartbeat. */
const MAX_KEY_LENGTH = 128;

/** A key's name in Redis: the key itself, or a hash of it when it is long (keys are sent on every call and heartbeat). */
export function keyNameOf(key: string): string {
  return key.length > MAX_KEY_LENGTH ? `#${createHash('sha1').update(key).digest('hex')}` : key;
}

/** A Lua script run by its SHA; reloaded when the server answers NOSCRIPT (after a restart or SCRIPT FLUSH). */
export class RedisScript {
  readonly #sha: string;

  constructor(readonly source: string) {
    this.#sha = createHash('sha1').update(source).digest('hex');
  }

  async run(redis: Redis | Cluster, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.#sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

export const acquireScript = new RedisScript(ACQUIRE);
export const heartbeatScript = new RedisScript(HEARTBEAT);
export const demandScript = new RedisScript(DEMAND);
