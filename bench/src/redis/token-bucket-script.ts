/**
 * @module The ceiling of section B: a bare token bucket in one Lua script, run with EVALSHA on one key.
 * It is written in its leanest exact form, GCRA (one number per key, the theoretical arrival time,
 * decisions identical to a token bucket's), with Redis TIME as the clock and an expiry on every write
 * so idle keys vanish. No library around it: what a Redis-backed limiter costs at the least.
 */
export const TOKEN_BUCKET_LUA = `
-- KEYS[1] the bucket; ARGV[1] ms per token; ARGV[2] capacity * ms per token
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local after = tat + interval
if after - now > tolerance then return 0 end
redis.call('SET', KEYS[1], after, 'PX', math.ceil(after - now))
return 1
`;
