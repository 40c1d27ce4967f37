/**
 * The rate-limit algorithms of algorithms.ts as Redis Lua scripts, line for line, for `RedisRateLimitStore`.
 * Lua numbers are IEEE doubles like JavaScript's, and each script performs the same operations in the same
 * order as the matching `step`, so the decisions are bit-identical (`math.fmod` is JavaScript's `%`).
 *
 * Conventions of every script:
 * - `KEYS[1]` is the key; `ARGV[1]` `nowMs` (the caller's clock: never Redis `TIME`), `ARGV[2]` the cost, then
 *   the algorithm's configuration.
 * - Numbers cross the boundary as strings: JavaScript's `String(n)` parses back exactly, and `%.17g` is
 *   exact the other way (a Lua number returned as such would be truncated to an integer reply, and
 *   `tostring` keeps only 14 digits).
 * - Answer: `{ allowed (1 | 0), remaining, resetMs, retryAfterMs }`.
 * - A denied request writes nothing. An allowed one writes the state and `PEXPIRE`s it `resetMs` from now
 *   (rounded up; deleted when not positive): by then it is equivalent to none.
 * - A key holding another type or another algorithm's fields is treated as empty, and replaced on write.
 */

/** Helpers shared by the scripts. */
const PRELUDE = `
local function num(x) return string.format('%.17g', x) end
local function expire(key, ms)
  local p = math.ceil(ms)
  if p > 0 then redis.call('PEXPIRE', key, num(p)) else redis.call('DEL', key) end
end
local key = KEYS[1]
local now = tonumber(ARGV[1])
local cost = tonumber(ARGV[2])
local kind = redis.call('TYPE', key)['ok']
`;

/** FixedWindow.step. ARGV[3] limit, ARGV[4] windowMs. State: hash `w` (windowStartMs), `c` (count). */
export const FIXED_WINDOW_LUA = `${PRELUDE}
local limit = tonumber(ARGV[3])
local windowMs = tonumber(ARGV[4])
local windowStart = now - math.fmod(math.fmod(now, windowMs) + windowMs, windowMs)
local count = 0
local valid = false
if kind == 'hash' then
  local f = redis.call('HMGET', key, 'w', 'c')
  local w, c = tonumber(f[1]), tonumber(f[2])
  if w ~= nil and c ~= nil then
    valid = true
    if w >= windowStart then
      windowStart = w
      count = c
    end
  end
end
local resetMs = windowStart + windowMs - now
if count + cost <= limit then
  if kind ~= 'none' and not valid then redis.call('DEL', key) end
  redis.call('HSET', key, 'w', num(windowStart), 'c', num(count + cost))
  expire(key, resetMs)
  return { 1, num(limit - (count + cost)), num(resetMs), '0' }
end
return { 0, num(limit - count), num(resetMs), num(resetMs) }
`;

/**
 * SlidingWindow.step. ARGV[3] limit, ARGV[4] windowMs, ARGV[5] a member prefix unique to this call. State: a
 * sorted set whose scores are the log's timestamps (members `<prefix>:<i>` only keep equal timestamps
 * apart), so the log's order is the set's rank order and no step reads more than two entries.
 */
export const SLIDING_WINDOW_LUA = `${PRELUDE}
local limit = tonumber(ARGV[3])
local windowMs = tonumber(ARGV[4])
local cutoff = now - windowMs
local size, first = 0, 0
if kind == 'zset' then
  size = redis.call('ZCARD', key)
  first = redis.call('ZCOUNT', key, '-inf', num(cutoff))
  if size - first > limit then first = size - limit end
end
local count = size - first
local function at(rank) return tonumber(redis.call('ZRANGE', key, rank, rank, 'WITHSCORES')[2]) end
if count + cost <= limit then
  if kind ~= 'none' and kind ~= 'zset' then redis.call('DEL', key) end
  if first > 0 then redis.call('ZREMRANGEBYRANK', key, 0, first - 1) end
  local stamp = num(now)
  local i = 1
  while i <= cost do
    local args = {}
    local last = math.min(cost, i + 499)
    for j = i, last do
      args[#args + 1] = stamp
      args[#args + 1] = ARGV[5] .. ':' .. j
    end
    redis.call('ZADD', key, unpack(args))
    i = last + 1
  end
  local resetMs = at(-1) + windowMs - now
  expire(key, resetMs)
  return { 1, num(limit - (count + cost)), num(resetMs), '0' }
end
local mustLeave = count + cost - limit
local retryAfterMs = at(first + mustLeave - 1) + windowMs - now
return { 0, num(limit - count), num(at(-1) + windowMs - now), num(retryAfterMs) }
`;

/**
 * TokenBucket.step. ARGV[3] capacity, ARGV[4] refillTokens, ARGV[5] refillIntervalMs. State: hash `t`
 * (tokens, fractional, kept exactly), `u` (updatedAtMs).
 */
export const TOKEN_BUCKET_LUA = `${PRELUDE}
local EPSILON = 1e-9
local capacity = tonumber(ARGV[3])
local refillTokens = tonumber(ARGV[4])
local refillIntervalMs = tonumber(ARGV[5])
local function msToRefill(tokens)
  if tokens <= EPSILON then return 0 end
  return math.max(0, math.ceil((tokens * refillIntervalMs) / refillTokens - EPSILON))
end
local tokens = capacity
local updatedAt = now
local valid = false
if kind == 'hash' then
  local f = redis.call('HMGET', key, 't', 'u')
  local t, u = tonumber(f[1]), tonumber(f[2])
  if t ~= nil and u ~= nil then
    valid = true
    local elapsed = now - u
    if elapsed > 0 then
      tokens = math.min(capacity, t + (elapsed * refillTokens) / refillIntervalMs)
    else
      tokens = t
    end
    updatedAt = math.max(now, u)
  end
end
local lagMs = updatedAt - now
if tokens + EPSILON >= cost then
  local left = math.max(0, tokens - cost)
  if kind ~= 'none' and not valid then redis.call('DEL', key) end
  redis.call('HSET', key, 't', num(left), 'u', num(updatedAt))
  local resetMs = lagMs + msToRefill(capacity - left)
  expire(key, resetMs)
  return { 1, num(math.floor(left + EPSILON)), num(resetMs), '0' }
end
return {
  0,
  num(math.floor(tokens + EPSILON)),
  num(lagMs + msToRefill(capacity - tokens)),
  num(math.max(1, lagMs + msToRefill(cost - tokens))),
}
`;
