// Priority classes through Redis: the Lua, part of every script's prelude (see redis-scripts.ts),
// and what the calls send it.
import type { ResolvedClasses } from '../local/index.js';

export const CLASSES = `
-- A lease of a priority class carries its index after a '^' in its id (before any '|'), and is in
-- its class's set too (the class-set prefix then the index), scored as in the global set.
local function class_of(member)
  return tonumber(string.match(member, '^[^|]*%^(%d+)'))
end
-- Priority classes (prefix '' without): each class's live leases and guarantee (its share of the
-- limit, rounded down), and whether any instance has callers of it waiting ('demand': members
-- 'index:instance' scored by when they lapse). mask: this instance's, one '1' or '0' per class;
-- its waiters renew it with every attempt (at least one per poll), so it lapses soon after them.
local function class_counts(prefix, demand, inst, mask, shares, glimit, now, lapse)
  if prefix == '' then return nil end
  local since = '(' .. now
  local classes = {}
  for share in string.gmatch(shares, '[^,]+') do
    local c = #classes
    local field = c .. ':' .. inst
    if string.byte(mask, c + 1) == 49 then redis.call('ZADD', demand, lapse, field) else redis.call('ZREM', demand, field) end
    classes[c + 1] = { q = math.floor(tonumber(share) * glimit), used = redis.call('ZCOUNT', prefix .. c, since, '+inf'), waits = false }
  end
  for _, field in ipairs(redis.call('ZRANGE', demand, since, '+inf', 'BYSCORE')) do
    local cl = classes[(tonumber(string.match(field, '^(%d+):')) or -1) + 1]
    if cl then cl.waits = true end
  end
  return classes
end
-- Whether class c, at or over its guarantee, must leave the free slots to classes under theirs
-- whose callers wait somewhere: a class borrows only what no waiting class is guaranteed.
local function yields(classes, c, used, glimit)
  local mine = classes[c + 1]
  if glimit < 0 or mine.used < mine.q then return false end
  local held_for = 0
  for d, cl in ipairs(classes) do
    if d ~= c + 1 and cl.waits and cl.used < cl.q then held_for = held_for + cl.q - cl.used end
  end
  return used + held_for >= glimit
end
`;

/** The keys' names the class arguments need (see RedisKeys). */
interface ClassKeys {
  readonly classSetPrefix: string;
  readonly classDemand: string;
}

/**
 * The arguments the scripts take of the priority classes: the class-set prefix ('' without
 * classes), the demand set, this instance's `mask` and how long its demand lives unrenewed
 * (`lapseMs`); an admission's, with its `instance`, also the instance and the shares.
 */
export function classArgs(
  limits: { readonly classes: ResolvedClasses },
  keys: ClassKeys,
  mask: string,
  lapseMs: number,
  instance?: string,
): (string | number)[] {
  const { names, shares } = limits.classes;
  const on = names.length > 0;
  const head = on ? [keys.classSetPrefix, keys.classDemand] : ['', ''];
  if (instance === undefined) return [...head, on ? mask : '', lapseMs];
  return [...head, on ? instance : '', on ? mask : '', shares.join(','), lapseMs];
}

/** How long an instance's waiting callers of a class count unrenewed: a few of their polls (see RedisWaiting). */
export const demandLapseMs = (pollMs: number): number => Math.ceil(3 * pollMs) + 50;

/** This instance's members of the demand set, one per class. */
export function demandFields(limits: { readonly classes: ResolvedClasses }, instance: string): string[] {
  return limits.classes.names.map((_, c) => `${c}:${instance}`);
}
