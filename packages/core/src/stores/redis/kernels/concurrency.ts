/**
 * @module The concurrency kernel in Lua, the twin of algorithms/concurrency.ts, as fragments the plan
 * scripts assemble like the rate kernels (kernels/<algorithm>.ts), so a plan that mixes concurrency and rate
 * policies is decided all or nothing in one script, one round trip. The two small scripts of a lease's life
 * after the decision, release and renew, are in scripts/lease-scripts.ts.
 *
 * State: a sorted set per key and policy, member = lease id (the store's instance id and the limiter's
 * lease number), score = deadline in ms (Redis `TIME`). `load` first drops the leases whose deadline has
 * passed (ZREMRANGEBYSCORE), so a process that died holding leases frees its slots after the lease time;
 * the set expires (PEXPIREAT) with its latest deadline. A request takes one lease whatever its cost; the
 * apply script's ARGV[3] is the lease id.
 */
import { MAX_LEASE_RETRY_MS } from '../../../algorithms/concurrency.js';
import { CLOCK_TOLERANCE_MS, type LuaKernel, lua, type Slot } from './lua.js';

/** The state locals of policy `s`: live leases, earliest and latest deadline. */
function locals(s: Slot): [n: string, earliest: string, latest: string] {
  return [`cn${s.i}`, `ce${s.i}`, `cl${s.i}`];
}

export const LEASE_KERNEL: LuaKernel = {
  state: ['cn', 'ce', 'cl'],
  load(s, p) {
    const [n, earliest, latest] = locals(s);
    const repair = `redis.call('DEL', ${s.key}); rep = rep + ${2 ** (s.i - 1)}`;
    return lua`
      local ${n}, ${earliest}, ${latest} = 0, now, now
      do
        -- Leases past their deadline end here: a holder that died frees its slot after the lease time.
        local gone = redis.pcall('ZREMRANGEBYSCORE', ${s.key}, '-inf', fmt('%d', now))
        if type(gone) == 'table' and gone.err then
          ${repair}
        else
          ${n} = redis.call('ZCARD', ${s.key})
          if ${n} > 0 then
            ${earliest} = tonumber(redis.call('ZRANGE', ${s.key}, 0, 0, 'WITHSCORES')[2])
            ${latest} = tonumber(redis.call('ZRANGE', ${s.key}, -1, -1, 'WITHSCORES')[2])
            -- A deadline no lease can have (further ahead than leaseMs and a clock step back), or a set
            -- without expiry: not ours, and it would hold slots for ever. Read as a key never seen.
            if ${latest} > now + ${p.windowMs + CLOCK_TOLERANCE_MS} or redis.call('PTTL', ${s.key}) < 0 then
              ${repair}
              ${n}, ${earliest}, ${latest} = 0, now, now
            end
          end
        end
      end`;
  },
  evaluate(s, p) {
    const [n, earliest, latest] = locals(s);
    return lua`
      if ${n} < ${p.limit} then
        ${s.flags} = 1; ${s.remaining} = (${p.limit} - ${n} - 1) * 1000
        if ${latest} > now + ${p.windowMs} then ${s.reset} = ${latest} - now else ${s.reset} = ${p.windowMs} end
      else
        ${s.remaining} = 0
        do
          local wait = ${earliest} - now
          if wait < 1 then wait = 1 elseif wait > ${MAX_LEASE_RETRY_MS} then wait = ${MAX_LEASE_RETRY_MS} end
          ${s.retry} = wait
        end
        ${s.reset} = ${latest} - now
      end`;
  },
  uncharged(s, p) {
    const [n, , latest] = locals(s);
    return lua`
      ${s.remaining} = 0
      if ${n} < ${p.limit} then ${s.remaining} = (${p.limit} - ${n}) * 1000 end
      ${s.reset} = ${latest} - now`;
  },
  commit(s, p) {
    const [, , latest] = locals(s);
    return lua`
      redis.call('ZADD', ${s.key}, fmt('%d', now + ${p.windowMs}), ARGV[3])
      if ${latest} > now + ${p.windowMs} then
        redis.call('PEXPIREAT', ${s.key}, fmt('%d', ${latest}))
      else
        redis.call('PEXPIREAT', ${s.key}, fmt('%d', now + ${p.windowMs}))
      end`;
  },
};
