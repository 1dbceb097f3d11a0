/**
 * @module What RedisStore sends to its apply and peek scripts and what they answer, in both languages:
 * the Lua that reads the arguments and writes the reply (scripts/plan-script.ts and scripts/peek-refund-scripts.ts place it), and
 * the TypeScript that builds the arguments and reads the reply. Kept short on the wire, since every
 * byte and every reply element is parsed on the hot path, by the client and by Redis:
 *
 * - **Arguments:** KEYS (one per policy), then ARGV[1] the cost in milli-units, left out when it is
 *   1000 (a cost of 1, the usual case), and ARGV[2] a `now` in ms, sent only by the test-only
 *   `timeSource: 'limiter'` (Redis `TIME` otherwise). So a usual call is `EVALSHA sha n key...`.
 * - **Reply:** one bulk string of integers separated by spaces: 5 per policy (flags, remaining milli,
 *   retryAfterMs, resetMs, delayMs), then the `now` the script used, then, only when a key held foreign
 *   or corrupt state (deleted, read as never seen), the mask of those keys. One string instead of an
 *   array of integers: a client decodes one element instead of seven (ioredis spends more on the array
 *   than on the rest of the reply), and `stringNumbers` or a client that gives strings change nothing.
 */
import { RedisStoreError } from '../redis-store-error.js';

/** The cost a call leaves out (milli-units): 1, what a check without `cost` charges. */
export const DEFAULT_COST_MILLI = 1000;

/**
 * Lua: `now` and `cost` from ARGV as above. Defines the aliases every fragment may use (kernels/<algorithm>.ts).
 */
export const READ_ARGS_LUA = `local INF, floor, fmod, fmt = math.huge, math.floor, math.fmod, string.format
local cost = ${DEFAULT_COST_MILLI}
if ARGV[1] then cost = tonumber(ARGV[1]) end
local now
if ARGV[2] and ARGV[2] ~= '' then
  now = tonumber(ARGV[2])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + floor(tonumber(t[2]) / 1000)
end`;

/** The comment lines that document ARGV in a generated script. */
export const ARGS_COMMENT = `-- ARGV[1]  cost in milli-units; absent: ${DEFAULT_COST_MILLI}
-- ARGV[2]  now in ms, tests only; absent or '': Redis TIME`;

/**
 * Lua: returns the reply from `out` (5 numbers per policy for `n` policies, then now) and `rep`. `%d`
 * writes every integer in full (Lua's own number-to-string would round past 14 digits).
 */
export function replyLua(n: number): string {
  const fields = 5 * n + 1;
  return `local reply = fmt('${Array.from({ length: fields }, () => '%d').join(' ')}', unpack(out, 1, ${fields}))
if rep > 0 then reply = reply .. fmt(' %d', rep) end
return reply`;
}

/** The script's arguments after its KEYS, appended to `args`. */
export function pushArgs(args: string[], cost: number, now: number | undefined, lease?: string): void {
  // A lease id sits at ARGV[3], so a call that takes a lease sends the two before it ('' for Redis TIME).
  if (lease !== undefined) args.push(String(cost), now === undefined ? '' : String(now), lease);
  else if (now !== undefined) args.push(String(cost), String(now));
  else if (cost !== DEFAULT_COST_MILLI) args.push(String(cost));
}

/**
 * The numbers of a reply for `n` policies (a string, or a Buffer from a client that returns bytes): 5
 * per policy, then now, then the mask of repaired keys when there is one. An `ERR_RL_STORE_REPLY` error
 * naming `script` when it is no such reply.
 */
export function readReply(reply: unknown, n: number, script: string): number[] {
  const text = typeof reply === 'string' ? reply : reply instanceof Uint8Array ? Buffer.from(reply).toString() : undefined;
  const fields = 5 * n + 1;
  if (text !== undefined) {
    const result: number[] = [];
    let value = 0;
    let digits = 0;
    let sign = 1;
    for (let i = 0; i <= text.length; i++) {
      const c = i < text.length ? text.charCodeAt(i) : 32;
      if (c >= 48 && c <= 57) {
        value = value * 10 + (c - 48);
        digits += 1;
      } else if (c === 32 && digits > 0) {
        result.push(sign * value);
        value = 0;
        digits = 0;
        sign = 1;
      } else if (c === 45 && digits === 0 && sign === 1) {
        sign = -1;
      } else {
        break;
      }
      if (i === text.length && (result.length === fields || result.length === fields + 1)) return result;
    }
  }
  const shown = JSON.stringify(text ?? reply)?.slice(0, 200);
  throw new RedisStoreError(
    'ERR_RL_STORE_REPLY',
    `expected ${fields} integers from ${script} (${n} ${n === 1 ? 'policy' : 'policies'}) in one string, got ${shown}; ` +
      'the client must return Redis replies as it decodes them (a wrapper that converts replies is the usual cause)',
  );
}
