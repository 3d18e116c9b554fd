/**
 * The Lua scripts of the Redis store. A decision is made by one script over every policy of the
 * request, atomic (with the other decisions of the same event-loop turn of its instance, in one
 * command), timed by Redis's own clock (`TIME`), so that every instance counts alike and exactly:
 *
 * - sliding window: a sorted set of the counted requests scored by their time (`ZREMRANGEBYSCORE`
 *   the ones out of the window, `ZCARD`, `ZADD` the decision's unique id);
 * - fixed window: a counter whose key ends with the window's index since the epoch (`INCR`);
 * - in flight: a sorted set of slot ids scored by their lease's end (the expired ones removed
 *   first, so that a crashed instance's slots come back after the lease).
 *
 * Enforced policies are checked first; only when all have room is the request counted in every
 * policy (warning-only `requests` policies count it always; slots are taken only when allowed).
 * Every key written gets a `PEXPIRE` of its window (its lease for slots).
 *
 * @module
 */
import { redisScript as script } from '../cluster/redis.js';

const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
`;

/**
 * The decisions of one event-loop turn of an instance, in order, each as if alone (an earlier one
 * counted before a later one looks). KEYS: each decision's policies' keys (a fixed window's
 * without its index), one decision after the other. ARGV: the lease in ms, the number of
 * decisions, then per decision its id, its number of policies and per policy its kind (`s`, `f`,
 * `c`), limit, window in ms and `1` when enforced. Returns, per decision, `allowed` then per policy:
 * used, ms until more quota, counted.
 */
export const DECIDE = script(`${NOW}local lease = tonumber(ARGV[1])
local out = {}
local function decide(id, k, a, n)
  local keys, used, allowed = {}, {}, 1
  for i = 1, n do
    local o = a + (i - 1) * 4
    local kind, limit, win = ARGV[o], tonumber(ARGV[o + 1]), tonumber(ARGV[o + 2])
    local key, u = KEYS[k + i], 0
    if kind == 's' then
      redis.call('ZREMRANGEBYSCORE', key, '-inf', now - win)
      u = redis.call('ZCARD', key)
    elseif kind == 'f' then
      key = key .. ':' .. string.format('%d', math.floor(now / win))
      u = tonumber(redis.call('GET', key) or '0')
    else
      redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
      u = redis.call('ZCARD', key)
    end
    keys[i], used[i] = key, u
    if ARGV[o + 3] == '1' and u >= limit then allowed = 0 end
  end
  out[#out + 1] = allowed
  for i = 1, n do
    local o = a + (i - 1) * 4
    local kind, limit, win, enforce = ARGV[o], tonumber(ARGV[o + 1]), tonumber(ARGV[o + 2]), ARGV[o + 3]
    local key, u, reset = keys[i], used[i], 0
    local counted = allowed == 1 or (kind ~= 'c' and enforce == '0')
    if counted then
      if kind == 's' then
        redis.call('ZADD', key, now, id)
        redis.call('PEXPIRE', key, win)
        u = u + 1
      elseif kind == 'f' then
        u = redis.call('INCR', key)
        if u == 1 then redis.call('PEXPIRE', key, win - now % win) end
      else
        redis.call('ZADD', key, now + lease, id)
        redis.call('PEXPIRE', key, lease)
        u = u + 1
      end
    end
    if u >= limit then
      if kind == 'f' then
        reset = win - now % win
      elseif kind == 's' and u > 0 then
        local oldest = redis.call('ZRANGE', key, u - limit, u - limit, 'WITHSCORES')
        if oldest[2] then reset = math.max(0, tonumber(oldest[2]) + win - now) end
      end
    end
    out[#out + 1] = u
    out[#out + 1] = reset
    out[#out + 1] = counted and 1 or 0
  end
end
local k, a = 0, 3
for d = 1, tonumber(ARGV[2]) do
  local n = tonumber(ARGV[a + 1])
  decide(ARGV[a], k, a + 2, n)
  k, a = k + n, a + 2 + 4 * n
end
return out
`);

/** KEYS: slot sets; ARGV: the lease in ms, then each key's slot id. Extends the slots still held. */
export const RENEW = script(`${NOW}local lease = tonumber(ARGV[1])
for i = 1, #KEYS do
  if redis.call('ZADD', KEYS[i], 'XX', 'CH', now + lease, ARGV[i + 1]) == 1 then
    redis.call('PEXPIRE', KEYS[i], lease)
  end
end
return #KEYS
`);

/** KEYS: slot sets; ARGV: the slot id. Frees one decision's slots in several policies. */
export const RELEASE = script(`for i = 1, #KEYS do
  redis.call('ZREM', KEYS[i], ARGV[1])
end
return #KEYS
`);

/**
 * KEYS: each group's key (a fixed window's without its index); ARGV: per key its kind and window
 * in ms. Returns each group's count now, writing nothing.
 */
export const USAGE = script(`${NOW}local out = {}
for i = 1, #KEYS do
  local kind, win = ARGV[2 * i - 1], tonumber(ARGV[2 * i])
  local key = KEYS[i]
  if kind == 's' then
    out[i] = redis.call('ZCOUNT', key, '(' .. string.format('%d', now - win), '+inf')
  elseif kind == 'f' then
    out[i] = tonumber(redis.call('GET', key .. ':' .. string.format('%d', math.floor(now / win))) or '0')
  else
    out[i] = redis.call('ZCOUNT', key, '(' .. string.format('%d', now), '+inf')
  end
end
return out
`);
