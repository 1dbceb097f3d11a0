import { describe, expect, it, vi } from 'vitest';
import { createLimiter } from '../limiter/create-limiter.js';
import { counterCells, exporters } from './metric-store.js';
import { registerPrometheusMetrics } from './prometheus.js';

function virtualClock(start = 1_000_000) {
  let t = start;
  const clock = () => t;
  return Object.assign(clock, { advance: (ms: number) => (t += ms) });
}

describe('decision observer', () => {
  it('tallies nothing while no exporter is attached (no MeterProvider, no Prometheus registry)', async () => {
    expect(exporters.attached).toBe(false);
    const limiter = createLimiter({ policies: [{ limit: 1, windowMs: 1000 }] });
    await limiter.check('a');
    await limiter.check('a');
    expect([...counterCells('requests')]).toEqual([]);
  });
});

describe('limiter.hotKeys()', () => {
  it('refuses a count that is not a whole number from 0 up, rather than a silently odd list', () => {
    const limiter = createLimiter({ policies: [{ limit: 1, windowMs: 60_000 }], clock: virtualClock(), hotKeys: true });
    for (let i = 0; i < 6; i++) limiter.decide(`k-${i % 3}`);
    for (const n of [-1, 1.5, Number.NaN, '3' as unknown as number]) {
      expect(() => limiter.hotKeys(n)).toThrow(expect.objectContaining({ code: 'ERR_RL_INVALID_HOT_KEYS_COUNT' }));
    }
    expect(limiter.hotKeys(0).rejected).toEqual([]);
    expect(limiter.hotKeys(2).rejected).toHaveLength(2);
  });

  it('ranks the most rejected keys and the keys that run near their limit', () => {
    const clock = virtualClock();
    const limiter = createLimiter({
      policies: [{ name: 'api', algorithm: 'fixed-window', limit: 10, windowMs: 60_000 }],
      clock,
      hotKeys: true,
    });
    for (let i = 0; i < 30; i++) limiter.decide('attacker');
    for (let i = 0; i < 12; i++) limiter.decide('busy');
    for (let i = 0; i < 10; i++) limiter.decide('careful');
    for (let i = 0; i < 3; i++) limiter.decide(`calm-${i}`);
    const report = limiter.hotKeys(2);
    expect(report.rejected).toEqual([
      { key: 'attacker', count: 20, error: 0, policy: 'api', remaining: 0 },
      { key: 'busy', count: 2, error: 0, policy: 'api', remaining: 0 },
    ]);
    // Admitted with at most 1 of 10 left: the 9th and 10th request of each key that got that far.
    expect(report.nearLimit.map((k) => [k.key, k.count])).toEqual([
      ['attacker', 2],
      ['busy', 2],
    ]);
    expect(report.errorBound).toBe(22 / report.size);
  });

  it('names the key of the policy that rejects (or runs near its limit) in a decision over several keys, not the combination', () => {
    const limiter = createLimiter({
      policies: [
        { name: 'ip', algorithm: 'fixed-window', limit: 10, windowMs: 60_000 },
        { name: 'user', algorithm: 'fixed-window', limit: 1_000, windowMs: 60_000 },
      ],
      clock: virtualClock(),
      hotKeys: true,
    });
    // One address, a new user each time: the address is over its limit, no combination repeats.
    for (let i = 0; i < 50; i++) limiter.decide({ ip: 'ip:203.0.113.7', user: `user:${i}` });
    const report = limiter.hotKeys(3);
    expect(report.rejected).toEqual([{ key: 'ip:203.0.113.7', count: 40, error: 0, policy: 'ip', remaining: 0 }]);
    expect(report.nearLimit.map((k) => [k.key, k.policy, k.count])).toEqual([['ip:203.0.113.7', 'ip', 2]]);
  });

  it("judges near the limit by the decision's own plan, where plans give one policy name different limits", () => {
    const limiter = createLimiter({
      plans: {
        free: [{ name: 'minute', algorithm: 'fixed-window', limit: 10, windowMs: 60_000 }],
        pro: [{ name: 'minute', algorithm: 'fixed-window', limit: 1_000, windowMs: 60_000 }],
      },
      clock: virtualClock(),
      hotKeys: true,
    });
    // 20 free users with 9 of 10 left are not near their limit (the pro plan's tenth, 100, would say so).
    for (let i = 0; i < 20; i++) limiter.decide(`free-${i}`, { plan: 'free' });
    for (let i = 0; i < 10; i++) limiter.decide('busy-free', { plan: 'free' });
    for (let i = 0; i < 905; i++) limiter.decide('busy-pro', { plan: 'pro' });
    expect(limiter.hotKeys(5).nearLimit.map((k) => [k.key, k.count])).toEqual([
      // Remaining 100 down to 95 of 1,000; 1 and 0 of 10.
      ['busy-pro', 6],
      ['busy-free', 2],
    ]);
  });

  it('samples a flood of rejections (1 in 16 past the first 1024) and still ranks and estimates the heavy keys', () => {
    const clock = virtualClock();
    const limiter = createLimiter({
      policies: [{ name: 'api', algorithm: 'fixed-window', limit: 1, windowMs: 60_000 }],
      clock,
      hotKeys: true,
    });
    for (let i = 0; i < 30_000; i++) {
      limiter.decide('attacker');
      limiter.decide('attacker');
      limiter.decide(i % 3 === 0 ? 'scanner' : `client-${i % 500}`);
    }
    const [first, second] = limiter.hotKeys(2).rejected;
    // 59,999 and 9,999 rejections; a sampled count's standard deviation is about sqrt(16 x count): 1 % and 2.5 %.
    expect(first?.key).toBe('attacker');
    expect(Math.abs((first?.count ?? 0) - 59_999)).toBeLessThan(59_999 * 0.05);
    expect(second?.key).toBe('scanner');
    expect(Math.abs((second?.count ?? 0) - (second?.error ?? 0) - 9_999)).toBeLessThan(9_999 * 0.12);
    // N / size, N the (estimated) 89,498 rejections (59,999 + 9,999 + 500 clients x 39).
    expect(Math.abs(limiter.hotKeys().errorBound * 128 - 89_498)).toBeLessThan(89_498 * 0.03);
  });

  it('counts rejections of every path: several policies (by the binding one), shadow policies, peeks never', async () => {
    const clock = virtualClock();
    const limiter = createLimiter({
      policies: [
        { name: 'burst', algorithm: 'fixed-window', limit: 5, windowMs: 1000 },
        { name: 'daily', algorithm: 'fixed-window', limit: 2, windowMs: 86_400_000 },
      ],
      shadow: { policies: [{ name: 'next', limit: 1, windowMs: 60_000 }] },
      clock,
      hotKeys: true,
    });
    for (let i = 0; i < 5; i++) limiter.decide('tenant');
    await limiter.peek('tenant');
    await limiter.peek('tenant');
    expect(limiter.hotKeys().rejected).toEqual([{ key: 'tenant', count: 3, error: 0, policy: 'daily', remaining: 0 }]);
  });

  it("counts a concurrency queue by its outcomes: a waiter's refused attempts never, an overflow once", async () => {
    const limiter = createLimiter({
      policies: [{ name: 'exports', algorithm: 'concurrency', limit: 1, queue: { size: 1, timeoutMs: 60_000 } }],
      hotKeys: true,
    });
    const held = await limiter.check('u');
    const queued = limiter.check('u');
    const overflow = await limiter.check('u');
    expect(overflow.limited).toBe(true);
    held.release?.();
    const admitted = await queued;
    expect(admitted.allowed).toBe(true);
    admitted.release?.();
    expect(limiter.hotKeys().rejected).toEqual([{ key: 'u', count: 1, error: 0, policy: 'exports', remaining: 0 }]);
    await limiter.close();
  });

  it('forgets keys after two quiet epochs', () => {
    const clock = virtualClock();
    const limiter = createLimiter({ policies: [{ limit: 1, windowMs: 1000 }], clock, hotKeys: true });
    limiter.decide('k');
    limiter.decide('k');
    expect(limiter.hotKeys().rejected).toHaveLength(1);
    clock.advance(60_000);
    expect(limiter.hotKeys().rejected.map((k) => k.key)).toEqual(['k']);
    clock.advance(60_000);
    expect(limiter.hotKeys().rejected).toEqual([]);
  });

  it('places a light stream in the epochs it was made in: the last one to two minutes, not more, not less', () => {
    const clock = virtualClock(0);
    const limiter = createLimiter({
      policies: [{ name: 'p', algorithm: 'fixed-window', limit: 1, windowMs: 86_400_000 }],
      clock,
      hotKeys: true,
    });
    // One rejection a second for 200 s: epochs start at 0, 60, 120 and 180 s.
    for (let s = 0; s < 200; s++) {
      limiter.decide('slow');
      clock.advance(1000);
    }
    const report = limiter.hotKeys();
    // The epoch of 180 s and the one before: the decisions of 120 to 199 s.
    expect(report.rejected).toEqual([{ key: 'slow', count: 80, error: 0, policy: 'p', remaining: 0 }]);
    expect(report.windowMs).toBe(80_000);
    // A burst long ago, then one late rejection: the burst is forgotten, the late one is not.
    for (let i = 0; i < 100; i++) limiter.decide('burst');
    clock.advance(150_000);
    limiter.decide('late');
    limiter.decide('late');
    expect(limiter.hotKeys().rejected.map((k) => [k.key, k.count])).toEqual([['late', 1]]);
  });

  it("counts a light stream exactly after a flood: the flood's sampling ends with its epoch", () => {
    const clock = virtualClock(0);
    const limiter = createLimiter({
      policies: [{ name: 'p', algorithm: 'fixed-window', limit: 1, windowMs: 86_400_000 }],
      clock,
      hotKeys: { size: 2 },
    });
    for (let i = 0; i < 200_000; i++) limiter.decide('attacker');
    clock.advance(60_000);
    for (let s = 0; s < 30; s++) {
      limiter.decide('light');
      clock.advance(1000);
    }
    // 29 rejections (its first request was admitted), each counted once at weight 1.
    expect(limiter.hotKeys().rejected.find((k) => k.key === 'light')).toMatchObject({ count: 29, error: 0 });
  });

  it('takes its sketch size and epoch from hotKeys: { size, epochMs }', () => {
    const clock = virtualClock();
    const logger = { warn: vi.fn(), error: vi.fn() };
    const limiter = createLimiter({ policies: [{ limit: 1, windowMs: 1000 }], clock, logger, hotKeys: { size: 2, epochMs: 1000 } });
    const requests = { a: 5, b: 4, c: 2 };
    for (const [key, n] of Object.entries(requests)) for (let i = 0; i < n; i++) limiter.decide(key);
    const report = limiter.hotKeys(5);
    // Two keys monitored: 'c' took the place of 'b' (the smaller count) and inherited it as its error.
    expect(report.rejected.map((k) => [k.key, k.count, k.error])).toEqual([
      ['a', 4, 0],
      ['c', 4, 3],
    ]);
    expect(report.size).toBe(2);
    expect(report.errorBound).toBe(8 / 2);
    expect(report.windowMs).toBe(1000);
    clock.advance(1000);
    expect(limiter.hotKeys().rejected.map((k) => k.key)).toEqual(['a', 'c']);
    clock.advance(1000);
    expect(limiter.hotKeys().rejected).toEqual([]);
    expect(logger.warn).not.toHaveBeenCalled();
  });

  // The request cells live as long as the process: each case counts under a policy name of its own.
  it.each([
    ['off by default', 'api-default', {}],
    ['with hotKeys: false', 'api-off', { hotKeys: false }],
  ] as const)('%s, counts nothing and reports an empty sketch of size 0; the metrics still count', async (_, name, options) => {
    const registry = new (await import('prom-client')).Registry();
    const unregister = registerPrometheusMetrics({ registry });
    try {
      const logger = { warn: vi.fn(), error: vi.fn() };
      const limiter = createLimiter({ policies: [{ name, limit: 2, windowMs: 60_000 }], logger, ...options });
      for (let i = 0; i < 5; i++) limiter.decide('attacker');
      await limiter.check('attacker', { route: '/x' });
      await limiter.check('attacker', { route: '/x', request: {} });
      expect(limiter.hotKeys(3)).toEqual({ rejected: [], nearLimit: [], busy: [], storeCalls: 0, windowMs: 0, size: 0, errorBound: 0 });
      expect(limiter.hotKeys(3).size).toBe(0);
      // An empty report must not read as "nobody is hammering us": said once per limiter, never per call.
      expect(logger.warn).toHaveBeenCalledTimes(1);
      expect(logger.warn.mock.calls[0]?.[0]).toEqual({ code: 'WRN_RL_HOT_KEYS_OFF' });
      expect(logger.warn.mock.calls[0]?.[1]).toMatch(/^WRN_RL_HOT_KEYS_OFF: .*Pass hotKeys: true/);
      const text = await registry.metrics();
      expect(text).toContain(`tollgate_requests_total{policy="${name}",result="allowed",mode="enforce"} 2`);
      expect(text).toContain(`tollgate_requests_total{policy="${name}",result="limited",mode="enforce"} 3`);
      expect(text).toContain(`tollgate_requests_total{policy="${name}",result="limited",mode="enforce",route="/x"} 2`);
    } finally {
      unregister();
    }
  });
});

describe('limiter.stats().shadow', () => {
  it('gives each shadow policy its agreement, would-block rate over intervals and most affected keys', () => {
    const clock = virtualClock(0);
    const limiter = createLimiter({
      policies: [{ name: 'live', algorithm: 'fixed-window', limit: 100, windowMs: 1_000_000 }],
      shadow: { policies: [{ name: 'strict', algorithm: 'fixed-window', limit: 2, windowMs: 1_000_000 }] },
      clock,
    });
    for (let i = 0; i < 5; i++) limiter.decide('heavy');
    clock.advance(10_000);
    for (let i = 0; i < 3; i++) limiter.decide('medium');
    limiter.decide('light');
    const [strict] = limiter.stats().shadow;
    expect(strict).toMatchObject({
      name: 'strict',
      checks: 9,
      wouldBlock: 4,
      shadowOnly: 4,
      enforcedOnly: 0,
      affectedKeys: 2,
      intervalMs: 10_000,
    });
    expect(strict?.agreement).toBeCloseTo(5 / 9);
    expect(strict?.wouldBlockRate).toBeCloseTo(4 / 9);
    expect(strict?.topKeys[0]).toEqual({ key: 'heavy', count: 3, error: 0 });
    expect(strict?.intervals).toEqual([
      { startMs: 0, checks: 5, wouldBlock: 3 },
      { startMs: 10_000, checks: 4, wouldBlock: 1 },
    ]);
    limiter.resetStats();
    expect(limiter.stats().shadow[0]).toMatchObject({ checks: 0, wouldBlock: 0, agreement: 1, topKeys: [] });
  });

  it("names the keys a candidate with a key of its own would block by that key, not the enforced policies' key", () => {
    // Moving a limit from the client IP to the user: four users behind one IP.
    const limiter = createLimiter({
      policies: [{ name: 'per-ip', algorithm: 'fixed-window', limit: 100, windowMs: 60_000 }],
      shadow: { policies: [{ name: 'per-user', algorithm: 'fixed-window', limit: 1, windowMs: 60_000 }] },
      clock: () => 0,
    });
    for (const user of ['u0', 'u1', 'u2', 'u3', 'u0', 'u1', 'u2', 'u3', 'u3'])
      limiter.decide({ 'per-ip': 'ip:10.0.0.1', 'per-user': `user:${user}` });
    // A candidate the object names no key for counts under the decision's key, as before.
    limiter.decide({ 'per-ip': 'ip:10.0.0.2' });
    limiter.decide({ 'per-ip': 'ip:10.0.0.2' });
    const [perUser] = limiter.stats().shadow;
    expect(perUser).toMatchObject({ wouldBlock: 6, affectedKeys: 5 });
    expect(perUser?.topKeys[0]).toEqual({ key: 'user:u3', count: 2, error: 0 });
    expect(perUser?.topKeys.map((k) => k.key).sort()).toEqual(['per-ip=ip%3A10.0.0.2', 'user:u0', 'user:u1', 'user:u2', 'user:u3']);
  });

  it('keeps a ring of at most 12 intervals', () => {
    const clock = virtualClock(0);
    const limiter = createLimiter({
      policies: [{ limit: 100, windowMs: 1000 }],
      shadow: { policies: [{ name: 'next', limit: 1, windowMs: 1000 }] },
      clock,
    });
    for (let i = 0; i < 20; i++) {
      limiter.decide(`k${i}`);
      clock.advance(10_000);
    }
    const intervals = limiter.stats().shadow[0]?.intervals ?? [];
    expect(intervals).toHaveLength(12);
    expect(intervals.at(-1)?.startMs).toBe(200_000);
    expect(intervals[0]?.startMs).toBe(90_000);
  });
});

describe('tollgate.requests cells', () => {
  it('counts direct checks by result while an exporter is attached, and keeps ranking hot keys', async () => {
    const unregister = registerPrometheusMetrics({ registry: { registerMetric() {}, removeSingleMetric() {} } });
    try {
      const clock = virtualClock();
      const single = createLimiter({
        policies: [{ name: 'direct-one', algorithm: 'fixed-window', limit: 3, windowMs: 60_000 }],
        clock,
        hotKeys: true,
      });
      for (let i = 0; i < 5; i++) await single.check('hammer');
      await single.check('other', { cost: 10 });
      const pair = createLimiter({
        policies: [
          { name: 'direct-wide', algorithm: 'fixed-window', limit: 100, windowMs: 60_000 },
          { name: 'direct-narrow', algorithm: 'fixed-window', limit: 2, windowMs: 60_000 },
        ],
        clock,
        hotKeys: true,
      });
      for (let i = 0; i < 4; i++) await pair.check('both');
      const value = (policy: string, result: string) =>
        [...counterCells('requests')].find((c) => c.labels.policy === policy && c.labels.result === result && c.labels.route === undefined)
          ?.value;
      expect(value('direct-one', 'allowed')).toBe(3);
      expect(value('direct-one', 'limited')).toBe(2);
      expect(value('direct-one', 'cost_exceeds_capacity')).toBe(1);
      // Several policies: each decision counts once, under its binding policy.
      expect(value('direct-narrow', 'allowed')).toBe(2);
      expect(value('direct-narrow', 'limited')).toBe(2);
      // Made at 0 with the limiter: no decision bound on it.
      expect(value('direct-wide', 'allowed')).toBe(0);
      expect(single.hotKeys(1).rejected).toEqual([{ key: 'hammer', count: 2, error: 0, policy: 'direct-one', remaining: 0 }]);
      expect(pair.hotKeys(1).rejected.map((k) => [k.key, k.policy, k.count])).toEqual([['both', 'direct-narrow', 2]]);
    } finally {
      unregister();
    }
  });

  it("makes the series a limiter knows at 0 when an exporter attaches after it was created, and a closed limiter's not", async () => {
    expect(exporters.attached).toBe(false);
    const limiter = createLimiter({
      name: 'late-attach',
      policies: [{ name: 'late', limit: 1, windowMs: 60_000 }],
      shadow: { policies: [{ name: 'late-next', limit: 1, windowMs: 60_000 }] },
    });
    const closed = createLimiter({ name: 'late-closed', policies: [{ name: 'late', limit: 1, windowMs: 60_000 }] });
    await closed.close();
    const mine = (id: 'requests' | 'shadowVerdicts', limiter: string) => [...counterCells(id)].filter((c) => c.labels.limiter === limiter);
    expect(mine('requests', 'late-attach')).toEqual([]);
    const unregister = registerPrometheusMetrics({ registry: { registerMetric() {}, removeSingleMetric() {} } });
    try {
      const cells = mine('requests', 'late-attach');
      expect(cells.map((c) => [c.labels.policy, c.labels.result, c.labels.mode, c.value])).toEqual([
        ['late', 'allowed', 'enforce', 0],
        ['late', 'limited', 'enforce', 0],
        ['late', 'store_error', 'enforce', 0],
      ]);
      expect(mine('shadowVerdicts', 'late-attach').map((c) => [c.labels.policy, c.labels.shadowVerdict, c.value])).toEqual([
        ['late-next', 'agree_allowed', 0],
        ['late-next', 'agree_limited', 0],
        ['late-next', 'shadow_only', 0],
        ['late-next', 'enforced_only', 0],
      ]);
      expect(mine('requests', 'late-closed')).toEqual([]);
      // The cells made at 0 are the ones decisions count in.
      await limiter.check('k');
      await limiter.check('k');
      expect(cells.map((c) => c.value)).toEqual([1, 1, 0]);
    } finally {
      unregister();
      await limiter.close();
    }
  });

  it("makes a new route's results at 0 at its first decision: its limited series is there before its first rejection", async () => {
    const unregister = registerPrometheusMetrics({ registry: { registerMetric() {}, removeSingleMetric() {} } });
    try {
      const limiter = createLimiter({ policies: [{ name: 'route-zero', limit: 1, windowMs: 60_000 }] });
      await limiter.check('k', { route: '/zero/:id' });
      const value = (result: string) =>
        [...counterCells('requests')].find(
          (c) => c.labels.policy === 'route-zero' && c.labels.route === '/zero/:id' && c.labels.result === result,
        )?.value;
      expect([value('allowed'), value('limited'), value('store_error')]).toEqual([1, 0, 0]);
      await limiter.check('k', { route: '/zero/:id' });
      expect(value('limited')).toBe(1);
    } finally {
      unregister();
    }
  });

  it('counts at most 200 routes per limiter, the rest under _other', async () => {
    const unregister = registerPrometheusMetrics({ registry: { registerMetric() {}, removeSingleMetric() {} } });
    try {
      const limiter = createLimiter({ policies: [{ name: 'route-bound', limit: 1000, windowMs: 1000 }] });
      for (let i = 0; i < 250; i++) await limiter.check('k', { route: `/r/${i}` });
      await limiter.check('k', { route: '/r/0' });
      await limiter.check('k', { route: '/r/249' });
      await limiter.check('k');
      const cells = [...counterCells('requests')].filter((c) => c.labels.policy === 'route-bound');
      const value = (route: string | undefined) => cells.find((c) => c.labels.route === route && c.labels.result === 'allowed')?.value;
      const routes = new Set(cells.map((c) => c.labels.route));
      expect([...routes].filter((r) => r !== undefined && r !== '_other')).toHaveLength(200);
      expect(value('/r/0')).toBe(2);
      expect(value('_other')).toBe(51);
      expect(value(undefined)).toBe(1);
    } finally {
      unregister();
    }
  });
});
