/**
 * @module Limiter options: every `ERR_RL_*` that parseLimiterOptions raises, with the option's path and a
 * message that says how to fix it; undefined means absent; defaults.
 */
import { describe, expect, it } from 'vitest';
import { DOCS_URL } from './errors.js';
import { createLimiter } from './limiter/create-limiter.js';
import { consoleLogger } from './logging.js';
import { type LimiterOptions, parseLimiterOptions } from './options.js';
import { MemoryStore } from './stores/memory-store.js';
import { configError } from './testing/config-error.js';

const policy = { limit: 5, windowMs: 1000 };

const cases: { name: string; options: unknown; code: string; option: string; fix: RegExp }[] = [
  {
    name: 'options not an object',
    options: null,
    code: 'ERR_RL_INVALID_OPTIONS',
    option: 'options',
    fix: /must be an options object like \{ policies: \[\{ limit: 100, windowMs: 60_000 \}\] \}/,
  },
  { name: 'policies missing', options: {}, code: 'ERR_RL_NO_POLICIES', option: 'policies', fix: /is required, e\.g\. policies: \[/ },
  {
    name: 'policies empty',
    options: { policies: [] },
    code: 'ERR_RL_NO_POLICIES',
    option: 'policies',
    fix: /must list at least one policy/,
  },
  {
    name: 'unknown option key (an express-rate-limit habit)',
    options: { policies: policy, windowMs: 1000 },
    code: 'ERR_RL_UNKNOWN_OPTION',
    option: 'windowMs',
    fix: /is not an option \(valid: name, policies, plans, defaultPlan, unknownPlan, shadowPolicies, shadow, mode, store, clock, cost, logger, validate, onStoreError, storeTimeoutMs, localShare, breaker, hotKeys\)/,
  },
  {
    name: 'duplicate policy names',
    options: {
      policies: [
        { name: 'api', ...policy },
        { name: 'day', ...policy },
        { name: 'api', ...policy },
      ],
    },
    code: 'ERR_RL_DUPLICATE_POLICY',
    option: 'policies[2].name',
    fix: /repeats the name of policies\[0\]; give every policy a unique name/,
  },
  {
    name: 'two unnamed policies (both default)',
    options: { policies: [policy, { ...policy, algorithm: 'fixed-window' }] },
    code: 'ERR_RL_DUPLICATE_POLICY',
    option: 'policies[1].name',
    fix: /unique name/,
  },
  {
    name: 'duplicate shadow policy names',
    options: { policies: policy, shadow: { policies: [policy, policy] } },
    code: 'ERR_RL_DUPLICATE_POLICY',
    option: 'shadow.policies[1].name',
    fix: /unique name/,
  },
  {
    name: 'shadow not an object',
    options: { policies: policy, shadow: null },
    code: 'ERR_RL_INVALID_SHADOW',
    option: 'shadow',
    fix: /must be an object like \{ policies: \[/,
  },
  {
    name: 'shadow without policies',
    options: { policies: policy, shadow: {} },
    code: 'ERR_RL_INVALID_SHADOW',
    option: 'shadow',
    fix: /must be an object like/,
  },
  {
    name: 'shadow with no policies',
    options: { policies: policy, shadow: { policies: [] } },
    code: 'ERR_RL_NO_POLICIES',
    option: 'shadow.policies',
    fix: /at least one policy/,
  },
  {
    name: 'unknown shadow key',
    options: { policies: policy, shadow: { policies: policy, mode: 'shadow' } },
    code: 'ERR_RL_UNKNOWN_OPTION',
    option: 'shadow.mode',
    fix: /is not an option \(valid: policies\)/,
  },
  {
    name: "mode 'dry-run'",
    options: { policies: policy, mode: 'dry-run' },
    code: 'ERR_RL_INVALID_MODE',
    option: 'mode',
    fix: /must be 'enforce' or 'shadow'/,
  },
  {
    name: 'store without apply/reset',
    options: { policies: policy, store: { get() {} } },
    code: 'ERR_RL_INVALID_STORE',
    option: 'store',
    fix: /must implement the Store interface \(apply, reset\), e\.g\. new MemoryStore\(\)/,
  },
  {
    name: 'clock not a function',
    options: { policies: policy, clock: Date.now() },
    code: 'ERR_RL_INVALID_CLOCK',
    option: 'clock',
    fix: /must be a function returning integer milliseconds/,
  },
  {
    name: 'logger without error()',
    options: { policies: policy, logger: { warn() {} } },
    code: 'ERR_RL_INVALID_LOGGER',
    option: 'logger',
    fix: /must have warn\(\) and error\(\) methods/,
  },
  ...[0, -1, 0.0001, Number.NaN, '1'].map((cost) => ({
    name: `cost ${String(cost)}`,
    options: { policies: policy, cost },
    code: 'ERR_RL_INVALID_COST',
    option: 'cost',
    fix: /must be a positive finite multiple of 1\/1000/,
  })),
  {
    name: 'cost above a window policy’s limit',
    options: { policies: [{ name: 'tiny', algorithm: 'fixed-window', limit: 3, windowMs: 1000 }], cost: 5 },
    code: 'ERR_RL_COST_EXCEEDS_CAPACITY',
    option: 'policies[0].limit',
    fix: /\(3, policy 'tiny'\) is below the cost 5, so no request could ever pass; raise limit or lower cost/,
  },
  {
    name: 'burst below the cost',
    options: { policies: [policy, { name: 'b', algorithm: 'gcra', limit: 10, windowMs: 1000, burst: 2 }], cost: 2.5 },
    code: 'ERR_RL_COST_EXCEEDS_CAPACITY',
    option: 'policies[1].burst',
    fix: /\(2, policy 'b'\) is below the cost 2\.5, so no request could ever pass; raise burst or lower cost/,
  },
  {
    name: 'shadow burst below the cost',
    options: { policies: policy, shadow: { policies: { algorithm: 'token-bucket', limit: 5, windowMs: 1000, burst: 1 } }, cost: 2 },
    code: 'ERR_RL_COST_EXCEEDS_CAPACITY',
    // A single policy, not a list: no index.
    option: 'shadow.policies.burst',
    fix: /raise burst or lower cost/,
  },
  {
    name: 'candidate limit below the cost, as written',
    options: { policies: policy, shadowPolicies: [policy, { name: 'c', algorithm: 'fixed-window', limit: 2, windowMs: 1000 }], cost: 3 },
    code: 'ERR_RL_COST_EXCEEDS_CAPACITY',
    option: 'shadowPolicies[1].limit',
    fix: /\(2, policy 'c'\) is below the cost 3/,
  },
  {
    name: 'a plan policy given alone',
    options: { plans: { free: { name: 'f', algorithm: 'fixed-window', limit: 2, windowMs: 1000 } }, cost: 3 },
    code: 'ERR_RL_COST_EXCEEDS_CAPACITY',
    option: "plans['free'].limit",
    fix: /raise limit or lower cost/,
  },
  {
    name: 'hot keys neither a boolean nor an object',
    options: { policies: policy, hotKeys: 'on' },
    code: 'ERR_RL_INVALID_HOT_KEYS',
    option: 'hotKeys',
    fix: /must be true, false or \{ size, epochMs \}/,
  },
  {
    name: 'hot keys null',
    options: { policies: policy, hotKeys: null },
    code: 'ERR_RL_INVALID_HOT_KEYS',
    option: 'hotKeys',
    fix: /must be true, false or \{ size, epochMs \}/,
  },
  {
    name: 'hot keys an array (an object, but never options)',
    options: { policies: policy, hotKeys: [] },
    code: 'ERR_RL_INVALID_HOT_KEYS',
    option: 'hotKeys',
    fix: /must be true, false or \{ size, epochMs \}/,
  },
  {
    name: 'breaker neither a boolean nor an object',
    options: { policies: policy, breaker: 1 },
    code: 'ERR_RL_INVALID_BREAKER',
    option: 'breaker',
    fix: /must be true, false or \{ failureThreshold, cooldownMs \}/,
  },
  {
    name: 'hot-key sketch of no key',
    options: { policies: policy, hotKeys: { size: 0 } },
    code: 'ERR_RL_INVALID_HOT_KEYS',
    option: 'hotKeys.size',
    fix: /must be an integer from 1 to 65536; received 0/,
  },
  {
    name: 'hot-key sketch too large',
    options: { policies: policy, hotKeys: { size: 1_000_000 } },
    code: 'ERR_RL_INVALID_HOT_KEYS',
    option: 'hotKeys.size',
    fix: /must be an integer from 1 to 65536/,
  },
  {
    name: 'hot-key epoch not an integer',
    options: { policies: policy, hotKeys: { epochMs: 0.5 } },
    code: 'ERR_RL_INVALID_HOT_KEYS',
    option: 'hotKeys.epochMs',
    fix: /must be a positive integer number of ms/,
  },
  {
    name: 'unknown hot-key option',
    options: { policies: policy, hotKeys: { capacity: 64 } },
    code: 'ERR_RL_UNKNOWN_OPTION',
    option: 'hotKeys.capacity',
    fix: /is not an option \(valid: size, epochMs\)/,
  },
];

describe('limiter options validation', () => {
  it.each(cases)('$name: $code at $option', ({ options, code, option, fix }) => {
    const error = configError(() => createLimiter(options as LimiterOptions));
    expect(error).toMatchObject({ code, option });
    expect(error.message).toMatch(fix);
    expect(error.message.startsWith(`${code}: '${option}' `)).toBe(true);
    expect(error.message).toContain(`${DOCS_URL}#${code.toLowerCase()}`);
  });

  it('undefined values count as absent', () => {
    const config = parseLimiterOptions({
      policies: policy,
      shadow: undefined,
      mode: undefined,
      store: undefined,
      clock: undefined,
      cost: undefined,
      logger: undefined,
      hotKeys: undefined,
    });
    expect(config).toMatchObject({
      mode: 'enforce',
      defaultCost: 1000,
      ownsStore: true,
      logger: consoleLogger,
      shadowPolicies: [],
      breaker: { failureThreshold: 1, cooldownMs: 1_000 },
      hotKeys: false,
    });
    expect(config.store).toBeInstanceOf(MemoryStore);
    expect(Object.isFrozen(config)).toBe(true);
    (config.store as MemoryStore).close();
  });

  it('breaker and hotKeys: true is on with the defaults, false is off; absent, the breaker is on and hot keys are off', () => {
    const on = parseLimiterOptions({ policies: policy, breaker: true, hotKeys: true });
    expect(on).toMatchObject({ breaker: { failureThreshold: 1, cooldownMs: 1_000 }, hotKeys: { size: 128, epochMs: 60_000 } });
    const off = parseLimiterOptions({ policies: policy, breaker: false, hotKeys: false });
    expect(off).toMatchObject({ breaker: false, hotKeys: false });
    const partial = parseLimiterOptions({ policies: policy, hotKeys: { size: 16 } });
    expect(partial.hotKeys).toEqual({ size: 16, epochMs: 60_000 });
    for (const c of [on, off, partial]) (c.store as MemoryStore).close();
  });

  it('a store passed in is used and not owned; the default clock is integer epoch milliseconds', () => {
    const store = new MemoryStore({ sweepIntervalMs: 0 });
    const before = Date.now();
    const config = parseLimiterOptions({ policies: policy, store });
    expect(config).toMatchObject({ store, ownsStore: false });
    const t = config.clock();
    expect(Number.isInteger(t)).toBe(true);
    expect(Math.abs(t - before)).toBeLessThan(60_000);
  });

  it('a frozen options object is accepted and left alone', () => {
    const options = Object.freeze({ policies: Object.freeze([Object.freeze({ ...policy })]), cost: 2 });
    expect(() => createLimiter(options)).not.toThrow();
    expect(options).toEqual({ policies: [policy], cost: 2 });
  });
});
