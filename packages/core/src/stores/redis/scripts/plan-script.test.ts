import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { algorithms } from '../../../algorithms/index.js';
import { RateLimitConfigError } from '../../../errors.js';
import { compilePolicy } from '../../../policy.js';
import type { AnyPolicyOptions, PolicyOptions } from '../../../types.js';
import type { StorePlan } from '../../store.js';
import { LUA_KERNELS } from '../kernels/index.js';
import { releaseScript, renewScript } from './lease-scripts.js';
import { MAX_SCRIPT_POLICIES, planScript } from './plan-script.js';

function plan(policies: AnyPolicyOptions[], shadow: AnyPolicyOptions[] = []): StorePlan {
  return Object.freeze({
    policies: [
      ...policies.map((p, i) => compilePolicy(p, `policies[${i}]`, false)),
      ...shadow.map((p, i) => compilePolicy(p, `shadow.policies[${i}]`, true)),
    ],
    enforcedCount: policies.length,
  });
}

const DAY = 86_400_000;
/** The plans of bench section B, and one with every other algorithm (enforced and shadow). */
const REPRESENTATIVE: Record<string, StorePlan> = {
  'one-gcra': plan([{ limit: 1000, windowMs: DAY }]),
  'gcra-and-fixed-window': plan([
    { limit: 1000, windowMs: DAY },
    { name: 'daily', algorithm: 'fixed-window', limit: 10_000, windowMs: DAY },
  ]),
  'token-bucket-sliding-log-shadow-sliding-window-leaky-bucket': plan(
    [
      { name: 'burst', algorithm: 'token-bucket', limit: 10, windowMs: 1000, burst: 20 },
      { name: 'login', algorithm: 'sliding-log', limit: 5, windowMs: 900_000 },
    ],
    [
      { name: 'minute', algorithm: 'sliding-window', limit: 100, windowMs: 60_000 },
      { name: 'smooth', algorithm: 'leaky-bucket', limit: 3, windowMs: 1000, burst: 5, delayAfter: 1 },
    ],
  ),
  'concurrency-and-fixed-window': plan([
    { name: 'exports', algorithm: 'concurrency', limit: 2, leaseMs: 120_000 },
    { name: 'daily', algorithm: 'fixed-window', limit: 50, windowMs: DAY },
  ]),
};

/** The script without its comments. */
function code(lua: string): string {
  return lua
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('--'))
    .join('\n');
}

describe('planScript', () => {
  it('has a Lua fragment set for every algorithm of the core', () => {
    expect(Object.keys(LUA_KERNELS).sort()).toEqual(Object.keys(algorithms).sort());
  });

  for (const [name, p] of Object.entries(REPRESENTATIVE)) {
    it(`generates ${name}.lua (a review aid: every change to the generated text shows in the diff)`, async () => {
      await expect(planScript(p).lua).toMatchFileSnapshot(`./__snapshots__/${name}.lua`);
    });
  }

  it('generates the lease release and renew scripts (kernels/concurrency.ts)', async () => {
    const leases = plan([{ name: 'exports', algorithm: 'concurrency', limit: 2, leaseMs: 120_000 }]);
    await expect(`${releaseScript(leases).lua}\n${renewScript(leases).lua}`).toMatchFileSnapshot(
      './__snapshots__/lease-release-and-renew.lua',
    );
  });

  it('names each script by plan and version, and EVALSHA by the SHA1 of its text', () => {
    const scripts = Object.values(REPRESENTATIVE).map(planScript);
    for (const s of scripts) {
      expect(s.sha).toBe(createHash('sha1').update(s.lua).digest('hex'));
      expect(s.name).toMatch(/^tollgate:apply:v2:[0-9a-f]{16}$/);
      expect(s.lua.startsWith(`-- ${s.name}:`)).toBe(true);
    }
    expect(new Set(scripts.map((s) => s.name)).size).toBe(scripts.length);
    // The same policies give the same script, whatever their names; another role or parameter does not.
    const gcra = REPRESENTATIVE['one-gcra'] as StorePlan;
    expect(planScript(plan([{ name: 'other', limit: 1000, windowMs: DAY }]))).toEqual(planScript(gcra));
    expect(planScript(plan([{ limit: 1000, windowMs: DAY, burst: 999 }])).name).not.toBe(planScript(gcra).name);
    const twoEnforced = plan([
      { name: 'a', limit: 1, windowMs: DAY },
      { name: 'b', limit: 1, windowMs: DAY },
    ]);
    const oneAndShadow = plan([{ name: 'a', limit: 1, windowMs: DAY }], [{ name: 'b', limit: 1, windowMs: DAY }]);
    expect(planScript(twoEnforced).name).not.toBe(planScript(oneAndShadow).name);
  });

  it('is straight-line code: no function, no table but the reply, no per-policy ARGV, keys only through KEYS[i]', () => {
    for (const p of Object.values(REPRESENTATIVE)) {
      const lua = code(planScript(p).lua);
      expect(lua).not.toMatch(/\bfunction\b/);
      expect(lua.match(/\{/g)).toHaveLength(1);
      expect(lua).toContain(
        `local out = {${Array(5 * p.policies.length)
          .fill('0')
          .join(', ')}, now}`,
      );
      // ARGV[3] is the lease id, in plans with a concurrency policy only.
      const leases = p.policies.some((x) => x.algorithm === 'concurrency');
      expect(new Set(lua.match(/ARGV\[[^\]]*\]/g))).toEqual(new Set(['ARGV[1]', 'ARGV[2]', ...(leases ? ['ARGV[3]'] : [])]));
      expect(new Set(lua.match(/KEYS(\[[^\]]*\])?/g))).toEqual(new Set(p.policies.map((_, i) => `KEYS[${i + 1}]`)));
      expect(lua).toContain("redis.call('TIME')");
      expect(lua).not.toMatch(/\b(SCAN|KEYS|FLUSHALL|FLUSHDB)\b'/);
    }
  });

  it(`applies up to ${MAX_SCRIPT_POLICIES} policies in one script, and refuses more with a configuration error`, () => {
    const many = (n: number) =>
      Array.from({ length: n }, (_, i): PolicyOptions => ({ name: `p${i}`, algorithm: 'sliding-log', limit: i + 1, windowMs: 1000 }));
    expect(planScript(plan(many(12), many(4))).lua).toContain(`KEYS[${MAX_SCRIPT_POLICIES}]`);
    const tooMany = plan(many(12), many(5));
    expect(() => planScript(tooMany)).toThrow(RateLimitConfigError);
    expect(() => planScript(tooMany)).toThrow(/ERR_RL_TOO_MANY_POLICIES: 'policies' and shadowPolicies together list 17 policies/);
  });
});
