/**
 * @module The ceiling of section B: a bare token bucket in one Lua script, run with EVALSHA on one key,
 * with Redis TIME as the clock and PEXPIRE so idle keys vanish. No library around it: what a
 * Redis-backed limiter costs at the least.
 */
export const TOKEN_BUCKET_LUA = `
-- KEYS[1] the bucket; ARGV[1] capacity (tokens); ARGV[2] ms per token
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cap = tonumber(ARGV[1])
local per = tonumber(ARGV[2])
local v = redis.call('HMGET', KEYS[1], 't', 'n')
local ts = tonumber(v[1]) or now
local tokens = tonumber(v[2]) or cap
tokens = math.min(cap, tokens + (now - ts) / per)
local ok = 0
if tokens >= 1 then
  tokens = tokens - 1
  ok = 1
end
redis.call('HSET', KEYS[1], 't', now, 'n', tokens)
redis.call('PEXPIRE', KEYS[1], math.ceil((cap - tokens) * per) + 1)
return ok
`;
