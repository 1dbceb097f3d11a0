/**
 * @module Concurrency leases in Redis, the twin of algorithms/concurrency.ts: the leases of one (key,
 * policy) are a sorted set, member = lease id, score = deadline in ms (Redis `TIME`). Acquire, release
 * and renew are each one script call (one round trip, atomic): expired leases are dropped first, so a
 * process that died without releasing frees its slots once `leaseMs` has passed, and the set's own
 * PEXPIRE removes a key nobody uses. `RedisLeases` runs them with EVALSHA, falling back to EVAL on
 * NOSCRIPT. A concurrency policy uses it with `leases: new RedisLeases(client)`.
 */
import { createHash } from 'node:crypto';
import type { RedisClientLike } from './redis-client.js';

/** The script. Normalised like the others so whitespace edits do not change the SHA. */
export const LEASE_LUA = `
-- KEYS[1]: the lease set of one key and policy (member: lease id, score: deadline in ms)
-- ARGV[1]: 'acquire' | 'release' | 'renew'
-- ARGV[2]: the lease id
-- ARGV[3]: limit (acquire)
-- ARGV[4]: leaseMs (acquire, renew)
-- ARGV[5]: now in ms, or '' for Redis TIME (tests replay traces with an injected now)
local op = ARGV[1]
if op == 'release' then
  return redis.call('ZREM', KEYS[1], ARGV[2])
end
local now
if ARGV[5] ~= '' then
  now = tonumber(ARGV[5])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local leaseMs = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if op == 'renew' then
  if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then
    return 0
  end
  redis.call('ZADD', KEYS[1], now + leaseMs, ARGV[2])
  redis.call('PEXPIRE', KEYS[1], leaseMs)
  return 1
end
local n = redis.call('ZCARD', KEYS[1])
if n >= tonumber(ARGV[3]) then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, n, tonumber(first[2]) - now}
end
redis.call('ZADD', KEYS[1], now + leaseMs, ARGV[2])
redis.call('PEXPIRE', KEYS[1], leaseMs)
return {1, n + 1, 0}
`
  .replaceAll(/^\s+/gm, '')
  .trim();

export const LEASE_SHA = createHash('sha1').update(LEASE_LUA).digest('hex');

/** The answer to an acquire. */
export interface LeaseGrant {
  readonly granted: boolean;
  /** Live leases after the call. */
  readonly inFlight: number;
  /** When refused: ms until the earliest lease expires; 0 when granted. */
  readonly earliestExpiryMs: number;
}

export class RedisLeases {
  constructor(
    private readonly client: RedisClientLike,
    /** Prefix of the lease keys; the key and policy are hash-tagged together for Redis Cluster. */
    private readonly prefix = 'tollgate',
  ) {}

  /** The Redis key of the leases of `key` under `policy`. */
  keyOf(key: string, policy: string): string {
    return `${this.prefix}:lease:{${policy}:${key}}`;
  }

  private async run(redisKey: string, args: string[]): Promise<unknown> {
    try {
      return await this.client.evalsha(LEASE_SHA, 1, redisKey, ...args);
    } catch (error) {
      if (!String((error as Error)?.message ?? error).includes('NOSCRIPT')) throw error;
      return this.client.eval(LEASE_LUA, 1, redisKey, ...args);
    }
  }

  /** Takes lease `id` if fewer than `limit` are live. `now` is for tests; production uses Redis TIME. */
  async acquire(key: string, policy: string, limit: number, leaseMs: number, id: string, now?: number): Promise<LeaseGrant> {
    const r = (await this.run(this.keyOf(key, policy), [
      'acquire',
      id,
      String(limit),
      String(leaseMs),
      now === undefined ? '' : String(now),
    ])) as number[];
    return { granted: r[0] === 1, inFlight: Number(r[1]), earliestExpiryMs: Number(r[2]) };
  }

  /** Ends lease `id`; false when it had already ended. */
  async release(key: string, policy: string, id: string): Promise<boolean> {
    return (await this.run(this.keyOf(key, policy), ['release', id, '0', '0', ''])) === 1;
  }

  /** Moves a live lease's deadline to now + leaseMs; false when it had ended. */
  async renew(key: string, policy: string, leaseMs: number, id: string, now?: number): Promise<boolean> {
    return (await this.run(this.keyOf(key, policy), ['renew', id, '0', String(leaseMs), now === undefined ? '' : String(now)])) === 1;
  }
}
