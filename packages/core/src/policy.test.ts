/**
 * @module Policy validation and compilation: every `ERR_RL_*` that compilePolicy raises, with the option's
 * path and a message that says how to fix it; and the fixed-point parameters it derives.
 */
import { describe, expect, it } from 'vitest';
import { DOCS_URL } from './errors.js';
import { createLimiter } from './limiter/create-limiter.js';
import { compilePolicy } from './policy.js';
import { configError } from './testing/config-error.js';
import type { PolicyOptions } from './types.js';

/** The error `fn` throws; fails the test when it throws none. */

function withPolicy(policy: unknown): () => unknown {
  return () => createLimiter({ policies: [{ name: 'ok', limit: 1, windowMs: 1000 }, policy as PolicyOptions] });
}

const cases: { name: string; policy: unknown; code: string; option: string; fix: RegExp }[] = [
  {
    name: 'limit 0',
    policy: { limit: 0, windowMs: 1000 },
    code: 'ERR_RL_INVALID_LIMIT',
    option: 'policies[1].limit',
    fix: /must be a positive integer/,
  },
  {
    name: 'limit 1.5',
    policy: { limit: 1.5, windowMs: 1000 },
    code: 'ERR_RL_INVALID_LIMIT',
    option: 'policies[1].limit',
    fix: /positive integer/,
  },
  {
    name: "limit '10'",
    policy: { limit: '10', windowMs: 1000 },
    code: 'ERR_RL_INVALID_LIMIT',
    option: 'policies[1].limit',
    fix: /positive integer/,
  },
  { name: 'limit missing', policy: { windowMs: 1000 }, code: 'ERR_RL_INVALID_LIMIT', option: 'policies[1].limit', fix: /positive integer/ },
  {
    name: 'negative window',
    policy: { limit: 1, windowMs: -1000 },
    code: 'ERR_RL_INVALID_WINDOW',
    option: 'policies[1].windowMs',
    fix: /positive integer number of milliseconds, e\.g\. 60_000/,
  },
  {
    name: 'window 0',
    policy: { limit: 1, windowMs: 0 },
    code: 'ERR_RL_INVALID_WINDOW',
    option: 'policies[1].windowMs',
    fix: /positive integer/,
  },
  {
    name: 'window 0.5',
    policy: { limit: 1, windowMs: 0.5 },
    code: 'ERR_RL_INVALID_WINDOW',
    option: 'policies[1].windowMs',
    fix: /positive integer/,
  },
  {
    name: 'unknown algorithm',
    policy: { algorithm: 'leaky', limit: 1, windowMs: 1000 },
    code: 'ERR_RL_UNKNOWN_ALGORITHM',
    option: 'policies[1].algorithm',
    fix: /must be one of 'fixed-window', 'sliding-log', 'sliding-window', 'token-bucket', 'gcra', 'leaky-bucket'/,
  },
  {
    name: 'unknown option key (a typo)',
    policy: { limit: 1, windowMs: 1000, max: 5 },
    code: 'ERR_RL_UNKNOWN_OPTION',
    option: 'policies[1].max',
    fix: /is not a policy option \(valid: name, algorithm, limit, windowMs, burst, anchor, delayAfter, maxDelayMs, unit; in the adapters' options also key\)/,
  },
  {
    name: 'burst on a window algorithm',
    policy: { algorithm: 'fixed-window', limit: 1, windowMs: 1000, burst: 2 },
    code: 'ERR_RL_OPTION_NOT_APPLICABLE',
    option: 'policies[1].burst',
    fix: /applies to token-bucket, gcra and leaky-bucket only, not 'fixed-window'; remove it/,
  },
  {
    name: 'anchor on gcra',
    policy: { algorithm: 'gcra', limit: 1, windowMs: 1000, anchor: 'clock' },
    code: 'ERR_RL_OPTION_NOT_APPLICABLE',
    option: 'policies[1].anchor',
    fix: /applies to fixed-window only, not 'gcra'; remove it/,
  },
  {
    name: 'delayAfter on token-bucket',
    policy: { algorithm: 'token-bucket', limit: 1, windowMs: 1000, delayAfter: 1 },
    code: 'ERR_RL_OPTION_NOT_APPLICABLE',
    option: 'policies[1].delayAfter',
    fix: /applies to leaky-bucket only, not 'token-bucket'; remove it/,
  },
  {
    name: 'burst 0',
    policy: { algorithm: 'gcra', limit: 1, windowMs: 1000, burst: 0 },
    code: 'ERR_RL_INVALID_BURST',
    option: 'policies[1].burst',
    fix: /must be a positive integer \(how many requests may arrive at once\); it must be at least the largest cost you send/,
  },
  {
    name: 'burst 2.5',
    policy: { algorithm: 'token-bucket', limit: 1, windowMs: 1000, burst: 2.5 },
    code: 'ERR_RL_INVALID_BURST',
    option: 'policies[1].burst',
    fix: /positive integer/,
  },
  {
    name: "anchor 'first'",
    policy: { algorithm: 'fixed-window', limit: 1, windowMs: 1000, anchor: 'first' },
    code: 'ERR_RL_INVALID_ANCHOR',
    option: 'policies[1].anchor',
    fix: /must be 'clock' or 'first-request'/,
  },
  {
    name: 'delayAfter -1',
    policy: { algorithm: 'leaky-bucket', limit: 1, windowMs: 1000, delayAfter: -1 },
    code: 'ERR_RL_INVALID_DELAY_AFTER',
    option: 'policies[1].delayAfter',
    fix: /must be a non-negative integer/,
  },
  {
    name: "unit 'bytes'",
    policy: { limit: 1, windowMs: 1000, unit: 'bytes' },
    code: 'ERR_RL_INVALID_UNIT',
    option: 'policies[1].unit',
    fix: /must be one of 'requests', 'content-bytes', 'concurrent-requests'/,
  },
  {
    name: "unit 'concurrent-requests' on a rate algorithm",
    policy: { algorithm: 'sliding-window', limit: 1, windowMs: 1000, unit: 'concurrent-requests' },
    code: 'ERR_RL_INVALID_UNIT',
    option: 'policies[1].unit',
    fix: /belongs to algorithm 'concurrency'/,
  },
  ...['', ' api', 'api ', 'api\n', 'caf\u00e9', 'x'.repeat(65), 42].map((name) => ({
    name: `name ${JSON.stringify(name)}`,
    policy: { name, limit: 1, windowMs: 1000 },
    code: 'ERR_RL_INVALID_NAME',
    option: 'policies[1].name',
    fix: /must be 1 to 64 printable ASCII characters, not starting or ending with a space/,
  })),
  {
    name: 'not an object',
    policy: 100,
    code: 'ERR_RL_INVALID_POLICY',
    option: 'policies[1]',
    fix: /must be an object like \{ limit: 100, windowMs: 60_000 \}/,
  },
  { name: 'null', policy: null, code: 'ERR_RL_INVALID_POLICY', option: 'policies[1]', fix: /must be an object/ },
  { name: 'an array', policy: [], code: 'ERR_RL_INVALID_POLICY', option: 'policies[1]', fix: /must be an object/ },
  {
    name: 'precision overflow (token-bucket: 1e6 per 2^31 - 1 ms)',
    policy: { algorithm: 'token-bucket', limit: 1_000_000, windowMs: 2_147_483_647 },
    code: 'ERR_RL_PRECISION',
    option: 'policies[1]',
    fix: /too large for exact integer arithmetic \(limit 1000000, windowMs 2147483647, burst 1000000\): burst x 1000 x 2147483647 = 2147483647000000000 passes 2\^53 .*; use a smaller burst/,
  },
  {
    name: 'precision overflow (sliding-window: 1e6 per 1e7 ms)',
    policy: { algorithm: 'sliding-window', limit: 1_000_000, windowMs: 10_000_000 },
    code: 'ERR_RL_PRECISION',
    option: 'policies[1]',
    fix: /: limit x 1000 x windowMs x 2 = 20000000000000000 passes 2\^53; use a smaller limit or a shorter window/,
  },
  {
    name: 'precision overflow (fixed-window: limit 1e13)',
    policy: { algorithm: 'fixed-window', limit: 10_000_000_000_000, windowMs: 1000 },
    code: 'ERR_RL_PRECISION',
    option: 'policies[1]',
    fix: /: limit x 1000 = 10000000000000000 passes 2\^53; use a smaller limit/,
  },
  {
    name: 'precision overflow (token-bucket: limit 1e13, burst 1: the limit, not the burst)',
    policy: { algorithm: 'token-bucket', limit: 10_000_000_000_000, windowMs: 1000, burst: 1 },
    code: 'ERR_RL_PRECISION',
    option: 'policies[1]',
    fix: /: limit x 1000 = 10000000000000000 passes 2\^53; use a smaller limit/,
  },
];

describe('policy validation', () => {
  it.each(cases)('$name: $code at $option', ({ policy, code, option, fix }) => {
    const error = configError(withPolicy(policy));
    expect(error).toBeInstanceOf(TypeError);
    expect(error).toMatchObject({ name: 'RateLimitConfigError', code, option });
    expect(error.message).toMatch(fix);
    expect(error.message.startsWith(`${code}: '${option}' `)).toBe(true);
    expect(error.message).toContain(`received `);
    expect(error.message).toContain(`${DOCS_URL}#${code.toLowerCase()}`);
  });

  it('a policy given alone (not in an array) is reported at `policies`', () => {
    expect(configError(() => createLimiter({ policies: { limit: 0, windowMs: 1000 } }))).toMatchObject({ option: 'policies.limit' });
  });

  it('shadow policies are validated the same way, at their own path', () => {
    const error = configError(() =>
      createLimiter({ policies: { limit: 1, windowMs: 1000 }, shadow: { policies: [{ limit: 1, windowMs: -1 }] } }),
    );
    expect(error).toMatchObject({ code: 'ERR_RL_INVALID_WINDOW', option: 'shadow.policies[0].windowMs' });
  });

  it("a shadow concurrency policy is refused for being one, whatever options it carries (not for 'leaseMs')", () => {
    for (const extra of [{}, { leaseMs: 60_000 }, { queue: { size: 2, timeoutMs: 100 } }, { maxLeaseMs: 1000 }]) {
      const policy = { name: 'cc', algorithm: 'concurrency', limit: 2, ...extra };
      const error = configError(() => createLimiter({ policies: { limit: 5, windowMs: 1000 }, shadow: { policies: policy as never } }));
      expect(error).toMatchObject({ code: 'ERR_RL_OPTION_NOT_APPLICABLE', option: 'shadow.policies.algorithm' });
      expect(error.message).toMatch(/'concurrency' is for enforced policies only .*; list it in policies/);
    }
  });

  it("an algorithm's options on another algorithm name the algorithm, typos and all", () => {
    // A typo in the algorithm is reported as one, not as its options being unknown.
    expect(configError(withPolicy({ algorithm: 'concurency', limit: 2, leaseMs: 1000 }))).toMatchObject({
      code: 'ERR_RL_UNKNOWN_ALGORITHM',
      option: 'policies[1].algorithm',
    });
    // A concurrency option without algorithm: 'concurrency', as `burst` on a window algorithm.
    for (const [key, value] of [
      ['leaseMs', 1000],
      ['maxLeaseMs', 5000],
      ['queue', { size: 1, timeoutMs: 10 }],
    ] as const) {
      const error = configError(withPolicy({ limit: 2, windowMs: 1000, [key]: value }));
      expect(error).toMatchObject({ code: 'ERR_RL_OPTION_NOT_APPLICABLE', option: `policies[1].${key}` });
      expect(error.message).toMatch(
        /applies to algorithm 'concurrency' only, not 'gcra'; set algorithm: 'concurrency' in policies, or remove it/,
      );
    }
    // And the other way: a rate option on a concurrency policy.
    for (const key of ['windowMs', 'burst', 'anchor', 'delayAfter', 'maxDelayMs']) {
      const error = configError(withPolicy({ algorithm: 'concurrency', limit: 2, [key]: 1 }));
      expect(error).toMatchObject({ code: 'ERR_RL_OPTION_NOT_APPLICABLE', option: `policies[1].${key}` });
      expect(error.message).toMatch(/applies to rate algorithms only, not 'concurrency'/);
    }
    // A key neither has is still a typo.
    expect(configError(withPolicy({ algorithm: 'concurrency', limit: 2, max: 1 }))).toMatchObject({ code: 'ERR_RL_UNKNOWN_OPTION' });
  });

  it('the largest exact configurations are accepted', () => {
    expect(() =>
      createLimiter({
        policies: [
          { name: 'daily', algorithm: 'fixed-window', limit: 10_000, windowMs: 86_400_000 },
          { name: 'burst', algorithm: 'gcra', limit: 10, windowMs: 1_000, burst: 20 },
          { name: 'hourly', algorithm: 'sliding-window', limit: 1_000_000, windowMs: 3_600_000 },
          { name: 'big', algorithm: 'token-bucket', limit: 1_000_000_000, windowMs: 1000 },
        ],
      }),
    ).not.toThrow();
  });

  it('undefined optional values count as absent', () => {
    const p = compilePolicy(
      { limit: 5, windowMs: 1000, burst: undefined, anchor: undefined, delayAfter: undefined, name: undefined },
      'p',
      false,
    );
    expect(p).toMatchObject({ name: 'default', algorithm: 'gcra', capacity: 5, anchorFirst: false, delayAfter: 0, unit: 'requests' });
  });

  it('the caller’s options are not mutated and the compiled policy is frozen', () => {
    const options: PolicyOptions = Object.freeze({ limit: 5, windowMs: 1000 });
    const p = compilePolicy(options, 'p', false);
    expect(options).toEqual({ limit: 5, windowMs: 1000 });
    expect(Object.isFrozen(p)).toBe(true);
  });
});

describe('fixed-point parameters', () => {
  it.each([
    // T = 1000 / 3 ms: 3 ticks per ms, one milli-unit is 1 tick, a request 1000 ticks (333.33 ms).
    { limit: 3, windowMs: 1000, burst: undefined, rate: 3, tokenTicks: 1, capTicks: 3000 },
    // T = 6000 ms: 1 tick per ms, a milli-unit is 6 ticks, a request 6000 (6 s).
    { limit: 10, windowMs: 60_000, burst: undefined, rate: 1, tokenTicks: 6, capTicks: 60_000 },
    // T = 1/7 ms.
    { limit: 7, windowMs: 1, burst: undefined, rate: 7000, tokenTicks: 1, capTicks: 7000 },
    // T = 100 ms, capacity from burst.
    { limit: 10, windowMs: 1000, burst: 20, rate: 10, tokenTicks: 1, capTicks: 20_000 },
  ])(
    'limit $limit per $windowMs ms (burst $burst): $rate ticks/ms, $tokenTicks ticks per milli-unit',
    ({ limit, windowMs, burst, rate, tokenTicks, capTicks }) => {
      const p = compilePolicy({ algorithm: 'gcra', limit, windowMs, burst }, 'p', false);
      expect(p).toMatchObject({ rate, tokenTicks, capTicks, capMilli: (burst ?? limit) * 1000 });
      // One request's ticks over the rate is exactly T = windowMs / limit.
      expect((1000 * tokenTicks) / rate).toBeCloseTo(windowMs / limit, 9);
    },
  );

  it('leaky-bucket delayAfter is kept in ticks', () => {
    expect(compilePolicy({ algorithm: 'leaky-bucket', limit: 10, windowMs: 60_000, delayAfter: 2 }, 'p', false).delayTicks).toBe(12_000);
  });

  it('the storage id carries the role, the name and every parameter that changes what the state means', () => {
    const id = (p: PolicyOptions, shadow = false) => compilePolicy(p, 'p', shadow).id;
    // Bucket state records its limit and burst (a reader converts it): neither is in the id.
    expect(id({ limit: 5, windowMs: 1000 })).toBe('enforce:default:gcra:1000');
    expect(id({ limit: 5, windowMs: 1000 }, true)).toBe('shadow:default:gcra:1000');
    expect(id({ limit: 50, windowMs: 1000, burst: 7 })).toBe(id({ limit: 5, windowMs: 1000 }));
    expect(id({ algorithm: 'token-bucket', limit: 5, windowMs: 1000, burst: 9 })).toBe('enforce:default:token-bucket:1000');
    expect(id({ algorithm: 'fixed-window', limit: 5, windowMs: 1000, anchor: 'first-request' })).toBe(
      'enforce:default:fixed-window:1000/first-request',
    );
    expect(id({ algorithm: 'fixed-window', limit: 5, windowMs: 1000 })).toBe(
      id({ algorithm: 'fixed-window', limit: 5, windowMs: 1000, anchor: 'clock' }),
    );
    expect(id({ algorithm: 'sliding-log', name: 'api', limit: 5, windowMs: 1000 })).toBe('enforce:api:sliding-log:1000');
    // A window algorithm's state means the same under any limit: a change of limit (or plan) keeps it.
    expect(id({ algorithm: 'sliding-window', limit: 5, windowMs: 1000 })).toBe(
      id({ algorithm: 'sliding-window', limit: 50, windowMs: 1000 }),
    );
    // So does a bucket's (it records its limit and burst, and a reader converts it); a new window does not.
    expect(id({ algorithm: 'token-bucket', limit: 5, windowMs: 1000 })).toBe(id({ algorithm: 'token-bucket', limit: 50, windowMs: 1000 }));
    expect(id({ algorithm: 'token-bucket', limit: 5, windowMs: 1000 })).not.toBe(
      id({ algorithm: 'token-bucket', limit: 5, windowMs: 2000 }),
    );
    // unit and delayAfter change what is advertised or how long to wait, not the state.
    expect(id({ algorithm: 'leaky-bucket', limit: 5, windowMs: 1000, delayAfter: 2 })).toBe(
      id({ algorithm: 'leaky-bucket', limit: 5, windowMs: 1000 }),
    );
  });
});
