/**
 * @module The Lua side of RedisStore: one script per plan, generated when the store first sees the plan.
 * It applies a request to every policy of the plan (the enforced group, then the shadow group, each
 * all-or-nothing) and returns every per-policy result, in one round trip. The script is straight-line
 * code: each policy's algorithm (kernels/<algorithm>.ts, a line-by-line port of its TypeScript kernel) with its
 * parameters baked in as literals, its state in locals of its own, no function, no table but the reply,
 * no per-policy ARGV and no dispatch on the algorithm: what Redis runs per call is the arithmetic of the
 * policies and their Redis calls, nothing else.
 *
 * State, in the smallest form that keeps it exact, under key names of layout `v2` (key-names.ts); a key
 * holding anything else is read as never seen, deleted and reported (kernels/<algorithm>.ts, state-repair.ts).
 * Every key expires (PXAT / PEXPIREAT) exactly when its
 * kernel's `expiresAt` says the state becomes equivalent to a key never seen, and the expiry time carries
 * part of the state, read back with PEXPIRETIME (Redis 7.0+):
 * - fixed-window:   `used` (milli-units); window start = expiry - windowMs.
 * - sliding-window: `curr` or `curr:prev` (milli-units); current window start = expiry - 2 * windowMs.
 * - token-bucket:   `missing:limit[:burst]` (ticks the bucket lacks, and the limit and burst it was
 *   written under; the burst only when it is not the limit); it is full again at the expiry, and the last
 *   refill was ceil(missing / rate) before, under the writer's rate.
 * - gcra, leaky-bucket: `limit[:frac[:burst]]` (the limit it was written under, so that a reader under
 *   another limit converts it; the fraction of the theoretical arrival time in ticks and the burst, when
 *   not 0 and not the limit): the TAT is the expiry (-1 ms when frac > 0). One policy that charges whole
 *   ms stores a small integer, which Redis shares between keys.
 * - a bucket refunded while other charges were outstanding appends its refund frame, `:refunded:offset`,
 *   and lives until the frame's horizon, `offset` ms after its own expiry (kernels/<algorithm>.ts, refund-frame.ts).
 * - sliding-log: a sorted set of admitted requests, one member per distinct millisecond, member = the
 *   time in ms, score = the running total of admitted cost (milli-units) up to and including it. Rank 0
 *   holds the base: `b` on a new log, `b<time>` once entries expired. The cost in the window is `last
 *   score - base score`, with no walk over the entries; expired entries are dropped from the head, each once.
 *
 * Time is Redis `TIME`, the one clock of every instance; ARGV[1] may carry a `now` for tests only.
 */
import { createHash } from 'node:crypto';
import type { CompiledPolicy } from '../../../algorithms/kernel.js';
import { RateLimitConfigError } from '../../../errors.js';
import type { StorePlan } from '../../store.js';
import { LEASE_KERNEL } from '../kernels/concurrency.js';
import { LUA_KERNELS } from '../kernels/index.js';
import { type LuaKernel, lua, type Slot, slot } from '../kernels/lua.js';
import { defineScript, type LuaScript } from './lua-script.js';
import { ARGS_COMMENT, READ_ARGS_LUA, replyLua } from './script-protocol.js';

/**
 * The most policies (enforced and shadow together) one script applies. Each policy keeps up to 8 locals
 * alive across the script, and Lua allows 200 per function: 16 leaves room to spare.
 */
export const MAX_SCRIPT_POLICIES = 16;

/** What the script knows of a policy, in its header: everything its fragments bake in. */
function describe(p: CompiledPolicy): string {
  const head = `${p.algorithm} ${p.limit} per ${p.windowMs} ms`;
  switch (p.algorithm) {
    case 'concurrency':
      return `concurrency ${p.limit} in flight, leases of ${p.windowMs} ms`;
    case 'fixed-window':
      return `${head}${p.anchorFirst ? ' from the first request' : ''}: capMilli ${p.capMilli}`;
    case 'sliding-window':
    case 'sliding-log':
      return `${head}: capMilli ${p.capMilli}`;
    default: {
      const max = Number.isFinite(p.maxDelayTicks) ? `, maxDelayTicks ${p.maxDelayTicks}` : '';
      const delay = p.algorithm === 'leaky-bucket' ? `, delayTicks ${p.delayTicks}${max}` : '';
      return `${head}, burst ${p.capacity}: rate ${p.rate}, tokenTicks ${p.tokenTicks}, capTicks ${p.capTicks}${delay}`;
    }
  }
}

/** Statements for one all-or-nothing group: the policies at plan positions `from` to `to` - 1. */
function group(plan: StorePlan, from: number, to: number): string {
  const members = groupMembers(plan, from, to);
  const [only] = members;
  if (only !== undefined && members.length === 1) {
    // A group of one: nothing else can veto the charge, so decide and charge in one pass.
    const { p, s, kernel } = only;
    if (kernel.consume !== undefined) {
      return lua`
        ${kernel.load(s, p)}
        ${kernel.consume(s, p)}`;
    }
    return lua`
      ${kernel.load(s, p)}
      ${kernel.evaluate(s, p)}
      if ${s.flags} == 1 then
        ${kernel.commit(s, p)}
        ${s.flags} = 5
      end`;
  }
  const decide = members.map(
    ({ p, s, kernel }) => lua`
      -- KEYS[${s.i}]
      ${kernel.load(s, p)}
      ${kernel.evaluate(s, p)}`,
  );
  const charge = members.map(
    ({ p, s, kernel }) => lua`
      ${kernel.commit(s, p)}
      ${s.flags} = 5`,
  );
  const report = reportUncharged(members);
  return lua`
    ${decide.join('\n')}
    if ${members.map(({ s }) => `${s.flags} == 1`).join(' and ')} then
      ${charge.join('\n')}
    else
      -- Admitted here but not charged: report the state as it stands (a cost that can never fit does).
      ${report.join('\n')}
    end`;
}

/** One policy of a group as the generators see it: its parameters, its Lua locals and its kernel. */
export interface GroupMember {
  readonly p: CompiledPolicy;
  readonly s: Slot;
  readonly kernel: LuaKernel;
}

/** The policies `plan.policies[from .. to)`, with KEYS slots numbered from `from + 1`. */
export function groupMembers(plan: StorePlan, from: number, to: number): GroupMember[] {
  return plan.policies.slice(from, to).map((p, k) => ({ p, s: slot(from + k + 1), kernel: luaKernel(p) }));
}

/** The Lua fragments of `p`'s algorithm: a rate kernel (kernels/<algorithm>.ts) or the lease kernel (kernels/concurrency.ts). */
export function luaKernel(p: CompiledPolicy): LuaKernel {
  return p.algorithm === 'concurrency' ? LEASE_KERNEL : LUA_KERNELS[p.algorithm];
}

/** Statements that report, for each policy that admitted but was not charged, the state as it stands. */
export function reportUncharged(members: readonly GroupMember[]): string[] {
  return members.map(
    ({ p, s, kernel }) => lua`
      if ${s.flags} == 1 then
        ${kernel.uncharged(s, p)}
        ${s.delay} = 0
      end`,
  );
}

/**
 * The script that applies a request to every policy of `plan`. Throws `RateLimitConfigError`
 * (`ERR_RL_TOO_MANY_POLICIES`) for a plan of more than `MAX_SCRIPT_POLICIES` policies.
 */
export function planScript(plan: StorePlan): LuaScript {
  const n = plan.policies.length;
  const e = plan.enforcedCount;
  if (n > MAX_SCRIPT_POLICIES) {
    throw new RateLimitConfigError(
      'ERR_RL_TOO_MANY_POLICIES',
      'policies',
      `and shadowPolicies together list ${n} policies; RedisStore applies at most ${MAX_SCRIPT_POLICIES} in one ` +
        'Redis script (one atomic round trip): merge policies, or split them across limiters',
      n,
    );
  }
  const keys = plan.policies.map((p, i) => `-- KEYS[${i + 1}]  ${describe(p)}`);
  const digest = createHash('sha256')
    .update(JSON.stringify([e, keys]))
    .digest('hex')
    .slice(0, 16);
  const name = `tollgate:apply:v2:${digest}`;
  const range = (a: number, b: number) => (a === b ? `KEYS[${a}]` : `KEYS[${a}..${b}]`);
  const groups =
    n > e ? `${range(1, e)} (enforced) and ${range(e + 1, n)} (shadow): each group all or nothing` : `${range(1, n)}: all or nothing`;
  const text = lua`
    -- ${name}: generated by packages/core/src/stores/redis/scripts/plan-script.ts for one plan.
    ${keys.join('\n')}
    ${ARGS_COMMENT}${plan.policies.some((p) => p.algorithm === 'concurrency') ? '\n-- ARGV[3]  the id of the lease the concurrency policies take when admitted' : ''}
    -- ${groups}.
    -- Returns one string (scripts/script-protocol.ts): 5 integers per policy (flags, remaining milli, retryAfterMs,
    -- resetMs, delayMs), then now, then, only when a key held foreign or corrupt state (deleted, read as
    -- never seen), the mask of those keys.
    ${READ_ARGS_LUA}
    local out = {${[...Array.from({ length: 5 * n }, () => '0'), 'now'].join(', ')}}
    local rep = 0
    -- The enforced policies.
    ${group(plan, 0, e)}
    ${n > e ? `-- The shadow policies.\n${group(plan, e, n)}` : ''}
    ${replyLua(n)}`;
  return defineScript(name, `${text}\n`);
}
