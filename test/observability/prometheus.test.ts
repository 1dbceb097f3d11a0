/**
 * @module Issue 12: the prom-client bridge registers tollgate's series on the user's registry; after
 * real HTTP traffic on Express, Fastify and Koa, the registry's text output reads back the same counts.
 */

import { createLimiter, createLoadShedder, MemoryStore, registerPrometheusMetrics, SHED_POLICY } from '@tollgate/core';
import { type OpenMetricsContentType, Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hit, ROUTE, type RunningApp, STARTERS } from './apps.js';
import { AsyncMemoryStore } from './stores.js';

const registry = new Registry();
let unregister: () => void;

beforeAll(() => {
  unregister = registerPrometheusMetrics({ registry });
});
afterAll(() => {
  unregister();
});

/** The value of the sample line `name{labels}`, labels in any order. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const inside = line.slice(line.indexOf('{') + 1, line.lastIndexOf('}'));
    const pairs = Object.fromEntries([...inside.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => pairs[k] === v)) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

describe.each(Object.entries(STARTERS))('prom-client registry after HTTP traffic on %s', (name, start) => {
  const apps: RunningApp[] = [];
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
  });

  it('tollgate_requests_total, tollgate_shadow_verdicts_total, tollgate_store_duration_seconds, tollgate_store_state', async () => {
    const policy = `prom-${name}`;
    const app = await start({
      policies: [{ name: policy, limit: 2, windowMs: 60_000 }],
      shadow: { policies: [{ name: `${policy}-next`, limit: 1, windowMs: 60_000 }] },
      store: new AsyncMemoryStore(),
    });
    apps.push(app);
    expect(await hit(app.url, 3)).toEqual([200, 200, 429]);
    const text = await registry.metrics();
    expect(text).toContain('# TYPE tollgate_requests_total counter');
    expect(text).toContain('# TYPE tollgate_store_duration_seconds histogram');
    expect(sample(text, 'tollgate_requests_total', { policy, result: 'allowed', mode: 'enforce', route: ROUTE })).toBe(2);
    expect(sample(text, 'tollgate_requests_total', { policy, result: 'limited', mode: 'enforce', route: ROUTE })).toBe(1);
    expect(sample(text, 'tollgate_shadow_verdicts_total', { policy: `${policy}-next`, verdict: 'shadow_only' })).toBe(1);
    expect(sample(text, 'tollgate_shadow_verdicts_total', { policy: `${policy}-next`, verdict: 'agree_limited' })).toBe(1);
    const count = sample(text, 'tollgate_store_duration_seconds_count', { store: 'async-memory', outcome: 'ok' });
    expect(count).toBeGreaterThanOrEqual(3);
    expect(sample(text, 'tollgate_store_duration_seconds_bucket', { store: 'async-memory', outcome: 'ok', le: '+Inf' })).toBe(count);
    expect(sample(text, 'tollgate_store_state', { store: 'async-memory', state: 'closed' })).toBeGreaterThanOrEqual(1);
    // Keys never become labels.
    expect(text).not.toMatch(/ip:|key=/);
  });

  it("a route's other results are there at 0 from its first request, so its first rejection is an increase", async () => {
    const policy = `prom-new-route-${name}`;
    const app = await start({ policies: [{ name: policy, limit: 1, windowMs: 60_000 }] });
    apps.push(app);
    expect(await hit(app.url, 1)).toEqual([200]);
    const labels = { policy, mode: 'enforce', route: ROUTE };
    const text = await registry.metrics();
    expect(sample(text, 'tollgate_requests_total', { ...labels, result: 'allowed' })).toBe(1);
    expect(sample(text, 'tollgate_requests_total', { ...labels, result: 'limited' })).toBe(0);
    expect(sample(text, 'tollgate_requests_total', { ...labels, result: 'store_error' })).toBe(0);
    expect(await hit(app.url, 1)).toEqual([429]);
    expect(sample(await registry.metrics(), 'tollgate_requests_total', { ...labels, result: 'limited' })).toBe(1);
  });

  it('tollgate_requests_total{result="shed"}: the shed cap\'s refusals, by priority', async () => {
    const shedder = createLoadShedder({ maxInFlight: 1, priority: () => 'normal' });
    const app = await start({ policies: [{ name: `prom-shed-${name}`, limit: 100, windowMs: 60_000 }], shed: shedder });
    apps.push(app);
    const before = await registry.metrics();
    const labels = { policy: SHED_POLICY, result: 'shed', mode: 'enforce', priority: 'normal', route: ROUTE };
    const held = shedder.acquire();
    expect(await hit(app.url, 2)).toEqual([503, 503]);
    held?.release(false);
    expect(await hit(app.url, 1)).toEqual([200]);
    // The series is shared by the three apps (one route template): this app adds 2.
    const after = sample(await registry.metrics(), 'tollgate_requests_total', labels);
    expect((after ?? 0) - (sample(before, 'tollgate_requests_total', labels) ?? 0)).toBe(2);
  });
});

describe('tollgate_shaping_delay_seconds', () => {
  it('is labelled with the leaky bucket that gave the delay, not the window that binds the decision', () => {
    let now = 1_000_000;
    const limiter = createLimiter({
      policies: [
        { name: 'prom-shaper', algorithm: 'leaky-bucket', limit: 10, windowMs: 1_000, burst: 5 },
        { name: 'prom-per-minute', algorithm: 'fixed-window', limit: 3, windowMs: 60_000 },
      ],
      clock: () => now,
    });
    const delays = [0, 1, 2].map(() => limiter.decide('k') as { delayMs: number; policy: string });
    now += 1;
    // The window binds (the least remaining); the shaper gave the delays.
    expect(delays.map((d) => d.policy)).toEqual(['prom-per-minute', 'prom-per-minute', 'prom-per-minute']);
    expect(delays.map((d) => d.delayMs)).toEqual([0, 100, 200]);
    return registry.metrics().then((text) => {
      expect(sample(text, 'tollgate_shaping_delay_seconds_count', { policy: 'prom-shaper' })).toBe(2);
      expect(sample(text, 'tollgate_shaping_delay_seconds_count', { policy: 'prom-per-minute' })).toBeUndefined();
    });
  });

  it('records no delay in shadow mode, where none is given', async () => {
    const limiter = createLimiter({
      policies: { name: 'prom-shadow-shaper', algorithm: 'leaky-bucket', limit: 10, windowMs: 1_000, burst: 5 },
      mode: 'shadow',
      clock: () => 1_000_000,
    });
    const delays = [0, 1, 2].map(() => (limiter.decide('k') as { delayMs: number }).delayMs);
    expect(delays).toEqual([0, 100, 200]);
    expect(sample(await registry.metrics(), 'tollgate_shaping_delay_seconds_count', { policy: 'prom-shadow-shaper' })).toBeUndefined();
  });
});

describe('tollgate.plan', () => {
  it('labels decisions with their plan when the limiter has several, and never with the one-plan default', async () => {
    const plans = createLimiter({
      plans: { free: [{ name: 'plan-quota', limit: 1, windowMs: 60_000 }], pro: [{ name: 'plan-quota', limit: 100, windowMs: 60_000 }] },
      defaultPlan: 'free',
    });
    const single = createLimiter({ policies: [{ name: 'single-plan', limit: 1, windowMs: 60_000 }] });
    await plans.check('a', { plan: 'free' });
    await plans.check('a', { plan: 'free' });
    await plans.check('b', { plan: 'pro' });
    await single.check('a');
    const text = await registry.metrics();
    expect(sample(text, 'tollgate_requests_total', { policy: 'plan-quota', plan: 'free', result: 'allowed' })).toBe(1);
    expect(sample(text, 'tollgate_requests_total', { policy: 'plan-quota', plan: 'free', result: 'limited' })).toBe(1);
    expect(sample(text, 'tollgate_requests_total', { policy: 'plan-quota', plan: 'pro', result: 'allowed' })).toBe(1);
    expect(text).toMatch(/tollgate_requests_total\{policy="single-plan",result="allowed",mode="enforce"\} 1/);
  });
});

describe('tollgate.limiter', () => {
  it('labels every series of a named limiter with its name, so two limiters whose policies share a name read apart', async () => {
    const logins = createLimiter({ name: 'prom-login', policies: [{ limit: 1, windowMs: 60_000 }] });
    const api = createLimiter({
      name: 'prom-api',
      policies: [
        { algorithm: 'leaky-bucket', limit: 10, windowMs: 1_000, burst: 5 },
        { name: 'exports', algorithm: 'concurrency', limit: 2 },
      ],
      shadow: { policies: [{ name: 'next', limit: 1, windowMs: 60_000 }] },
    });
    const unnamed = createLimiter({ policies: [{ name: 'prom-unnamed', limit: 1, windowMs: 60_000 }] });
    await logins.check('a');
    await logins.check('a');
    const held = [await api.check('a'), await api.check('a')];
    await unnamed.check('a');
    const text = await registry.metrics();
    const login = { policy: 'default', mode: 'enforce', limiter: 'prom-login' };
    expect(sample(text, 'tollgate_requests_total', { ...login, result: 'allowed' })).toBe(1);
    expect(sample(text, 'tollgate_requests_total', { ...login, result: 'limited' })).toBe(1);
    // The API's decisions bind on its concurrency policy (least left), under its own name.
    expect(sample(text, 'tollgate_requests_total', { policy: 'exports', result: 'allowed', limiter: 'prom-api' })).toBe(2);
    // Its other policy's series are there from the limiter's creation, at 0.
    expect(sample(text, 'tollgate_requests_total', { policy: 'default', result: 'allowed', limiter: 'prom-api' })).toBe(0);
    expect(sample(text, 'tollgate_shaping_delay_seconds_count', { policy: 'default', limiter: 'prom-api' })).toBe(1);
    expect(sample(text, 'tollgate_shadow_verdicts_total', { policy: 'next', verdict: 'shadow_only', limiter: 'prom-api' })).toBe(1);
    expect(sample(text, 'tollgate_leases_active', { policy: 'exports', limiter: 'prom-api' })).toBe(2);
    for (const limiter of ['prom-login', 'prom-api']) {
      expect(sample(text, 'tollgate_store_state', { store: 'memory', state: 'closed', limiter })).toBe(1);
    }
    // A limiter without a name writes no limiter label.
    expect(text).toMatch(/tollgate_requests_total\{policy="prom-unnamed",result="allowed",mode="enforce"\} 1/);
    for (const d of held) d.release?.();
    await Promise.all([logins.close(), api.close(), unnamed.close()]);
  });

  it("labels a named middleware's shed requests with its name", async () => {
    const shedder = createLoadShedder({ maxInFlight: 1, priority: () => 'normal' });
    const app = await STARTERS.express({ name: 'prom-shed-named', policies: [{ limit: 100, windowMs: 60_000 }], shed: shedder });
    try {
      const held = shedder.acquire();
      expect(await hit(app.url, 2)).toEqual([503, 503]);
      held?.release(false);
      const labels = { policy: SHED_POLICY, result: 'shed', priority: 'normal', limiter: 'prom-shed-named' };
      expect(sample(await registry.metrics(), 'tollgate_requests_total', labels)).toBe(2);
    } finally {
      await app.close();
    }
  });
});

describe('series known up front (Prometheus: "avoid missing metrics")', () => {
  const VERDICTS = ['agree_allowed', 'agree_limited', 'shadow_only', 'enforced_only'];

  it("a new limiter's series are there at 0 before its first decision: each enforced policy by result, each shadow verdict", async () => {
    const limiter = createLimiter({
      name: 'prom-zero',
      policies: [
        { name: 'zero-minute', limit: 2, windowMs: 60_000 },
        { name: 'zero-hour', limit: 100, windowMs: 3_600_000 },
      ],
      shadow: { policies: [{ name: 'zero-next', limit: 1, windowMs: 60_000 }] },
    });
    const text = await registry.metrics();
    // A first sample already at N is no increase to Prometheus: a burst on a new limiter read 0 on every panel.
    expect(text).toMatch(/^tollgate_requests_total\{policy="zero-minute",result="limited",mode="enforce",limiter="prom-zero"\} 0$/m);
    for (const policy of ['zero-minute', 'zero-hour']) {
      for (const result of ['allowed', 'limited', 'store_error']) {
        expect(sample(text, 'tollgate_requests_total', { policy, result, mode: 'enforce', limiter: 'prom-zero' })).toBe(0);
      }
      expect(sample(text, 'tollgate_requests_total', { policy, result: 'shadow_limited', limiter: 'prom-zero' })).toBeUndefined();
    }
    for (const verdict of VERDICTS) {
      expect(sample(text, 'tollgate_shadow_verdicts_total', { policy: 'zero-next', verdict, limiter: 'prom-zero' })).toBe(0);
    }
    // A shadow policy binds no decision: it has verdicts, not results.
    expect(sample(text, 'tollgate_requests_total', { policy: 'zero-next', limiter: 'prom-zero' })).toBeUndefined();
    for (let i = 0; i < 3; i++) await limiter.check('k');
    const after = await registry.metrics();
    const minute = { policy: 'zero-minute', mode: 'enforce', limiter: 'prom-zero' };
    expect(sample(after, 'tollgate_requests_total', { ...minute, result: 'allowed' })).toBe(2);
    expect(sample(after, 'tollgate_requests_total', { ...minute, result: 'limited' })).toBe(1);
    expect(sample(after, 'tollgate_shadow_verdicts_total', { policy: 'zero-next', verdict: 'shadow_only', limiter: 'prom-zero' })).toBe(1);
    await limiter.close();
  });

  it('in shadow mode, the results a shadow limiter gives: shadow_limited, never limited', async () => {
    const limiter = createLimiter({
      name: 'prom-zero-shadow',
      policies: [{ name: 'zero-trial', limit: 1, windowMs: 60_000 }],
      mode: 'shadow',
    });
    const text = await registry.metrics();
    const labels = { policy: 'zero-trial', mode: 'shadow', limiter: 'prom-zero-shadow' };
    for (const result of ['allowed', 'shadow_limited', 'store_error']) {
      expect(sample(text, 'tollgate_requests_total', { ...labels, result })).toBe(0);
    }
    expect(sample(text, 'tollgate_requests_total', { ...labels, result: 'limited' })).toBeUndefined();
    await limiter.close();
  });

  it("with plans, each plan's own enforced policies", async () => {
    const limiter = createLimiter({
      name: 'prom-zero-plans',
      plans: {
        free: [{ name: 'zero-quota', limit: 1, windowMs: 60_000 }],
        pro: [
          { name: 'zero-quota', limit: 100, windowMs: 60_000 },
          { name: 'zero-burst', limit: 10, windowMs: 1_000 },
        ],
      },
      defaultPlan: 'free',
    });
    const text = await registry.metrics();
    const at = (plan: string, policy: string) =>
      sample(text, 'tollgate_requests_total', { policy, plan, result: 'limited', mode: 'enforce', limiter: 'prom-zero-plans' });
    expect(at('free', 'zero-quota')).toBe(0);
    expect(at('pro', 'zero-quota')).toBe(0);
    expect(at('pro', 'zero-burst')).toBe(0);
    expect(at('free', 'zero-burst')).toBeUndefined();
    await limiter.close();
  });
});

describe('tollgate_store_evictions_total', () => {
  it('is there at 0 before any eviction, then counts the entries a full MemoryStore drops', async () => {
    const labels = { store: 'memory' };
    const before = sample(await registry.metrics(), 'tollgate_store_evictions_total', labels);
    expect(before).toBeGreaterThanOrEqual(0);
    const store = new MemoryStore({ maxKeys: 3, sweepIntervalMs: 0 });
    const limiter = createLimiter({ policies: [{ name: 'evictions', limit: 5, windowMs: 60_000 }], store });
    for (const key of ['a', 'b', 'c', 'd', 'e']) await limiter.check(key);
    expect(store.evictions).toBe(2);
    expect(sample(await registry.metrics(), 'tollgate_store_evictions_total', labels)).toBe((before ?? 0) + 2);
    await limiter.close();
  });
});

describe('registerPrometheusMetrics', () => {
  it('reads back as JSON too, and unregistering removes the series', async () => {
    const own = new Registry();
    const stop = registerPrometheusMetrics({ registry: own });
    const json = await own.getMetricsAsJSON();
    expect(json.map((m) => m.name)).toContain('tollgate_requests_total');
    stop();
    stop();
    expect(await own.metrics()).not.toContain('tollgate_');
  });

  it('an OpenMetrics registry gets each counter once as a family without `_total` and its samples with it', async () => {
    const own = new Registry<OpenMetricsContentType>();
    own.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    const stop = registerPrometheusMetrics({ registry: own });
    const limiter = createLimiter({ policies: [{ name: 'om', limit: 1, windowMs: 60_000 }] });
    await limiter.check('k');
    const text = await own.metrics();
    expect(text).toContain('# TYPE tollgate_requests counter');
    // Before: tollgate_requests_total_total, which no dashboard query or alert matches.
    expect(sample(text, 'tollgate_requests_total', { policy: 'om', result: 'allowed' })).toBe(1);
    expect(text).not.toContain('_total_total');
    expect(text.endsWith('# EOF\n')).toBe(true);
    // The plain text registry beside it is unchanged.
    expect(await registry.metrics()).toContain('# TYPE tollgate_requests_total counter');
    stop();
    await limiter.close();
  });

  it('rejects what is not a registry with a coded error', () => {
    expect(() => registerPrometheusMetrics({ registry: {} as never })).toThrow(/^ERR_RL_INVALID_REGISTRY/);
  });

  it('uses prom-client’s global register when no registry is passed', async () => {
    const { register } = await import('prom-client');
    const stop = registerPrometheusMetrics();
    try {
      expect(await register.metrics()).toContain('# TYPE tollgate_requests_total counter');
    } finally {
      stop();
    }
  });
});
