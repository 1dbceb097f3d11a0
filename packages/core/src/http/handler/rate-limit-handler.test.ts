import { describe, expect, it } from 'vitest';
import { RateLimitConfigError } from '../../errors.js';
import { formatLine, type LogFields } from '../../logging.js';
import { unhandledDuring } from '../../testing/unhandled.js';
import type { Decision, Logger } from '../../types.js';
import { createRateLimitHandler, type RequestInput, UNKEYED_KEY } from './rate-limit-handler.js';
import type { RateLimitOptions } from './rate-limit-options.js';

interface FakeReq {
  id: string;
  user?: unknown;
  weight?: unknown;
}

function recorder(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return {
    warnings,
    warn: (fields: LogFields, m: string) => warnings.push(formatLine(fields, m)),
    error: (fields: LogFields, m: string) => warnings.push(formatLine(fields, m)),
  };
}

function input(request: FakeReq, remoteAddress: string | undefined = '192.0.2.1'): RequestInput<FakeReq> {
  return { request, remoteAddress, headers: {}, method: 'GET', url: '/', logger: undefined };
}

function make(options: Partial<RateLimitOptions<FakeReq>>) {
  const logger = recorder();
  const handler = createRateLimitHandler<FakeReq>({
    policies: { algorithm: 'fixed-window', limit: 2, windowMs: 60_000 },
    clock: () => 1_000_000,
    logger,
    ...options,
  });
  return { handler, logger };
}

describe('createRateLimitHandler', () => {
  it('validates options once, with RateLimitConfigError naming the option', () => {
    expect(() => make({ headers: 'draft-8' as never })).toThrow(/ERR_RL_INVALID_HEADERS: 'headers'/);
    // An empty list: what the READMEs promise (write false), not the message of a list that repeats a format.
    expect(() => make({ headers: [] as never })).toThrow(
      /ERR_RL_INVALID_HEADERS: 'headers' as a list names at least one format; for no rate-limit header write false/,
    );
    expect(() => make({ skip: true as never })).toThrow(/'skip' must be a function/);
    expect(() => make({ keyGenerator: () => 'x' } as never)).toThrow(/ERR_RL_UNKNOWN_OPTION: 'keyGenerator'/);
    expect(() => make({ problem: { type: 'x' } as never })).toThrow(/'problem.type'/);
    expect(() => make({ problem: { types: { limited: 'has space' } } })).toThrow(RateLimitConfigError);
    expect(() => make({ pk: { secret: 'long-enough' }, headers: 'legacy' })).toThrow(/ERR_RL_INVALID_PK/);
    expect(() => make({ policies: [] })).toThrow(/ERR_RL_NO_POLICIES/);
    // A logger without warn() and error() would swallow every warning: refused, as createLimiter refuses it.
    for (const logger of [{}, 'x', 42, { warn() {} }, null]) {
      expect(() => make({ logger: logger as never })).toThrow(/ERR_RL_INVALID_LOGGER: 'logger'/);
    }
    // The limiter's own options pass through to createLimiter, which validates them.
    expect(() => make({ hotKeys: { size: -1 } })).toThrow(/ERR_RL_INVALID_HOT_KEYS: 'hotKeys.size'/);
    expect(make({ hotKeys: false }).handler.limiter.hotKeys().size).toBe(0);
    expect(make({}).handler.limiter.hotKeys().size).toBe(0);
    expect(make({ hotKeys: true }).handler.limiter.hotKeys().size).toBe(128);
    // A misspelt warning code in validate would silence nothing: it is an error, not a silent no-op.
    expect(() => make({ validate: { WRN_RL_UNKEYD: false } as never })).toThrow(
      /ERR_RL_INVALID_OPTION: 'validate.WRN_RL_UNKEYD' must name a warning code/,
    );
    expect(() => make({ validate: { WRN_RL_UNKEYED: 'no' } as never })).toThrow(/'validate.WRN_RL_UNKEYED'/);
    expect(() => make({ validate: { WRN_RL_UNKEYED: false } })).not.toThrow();
    expect(() => createRateLimitHandler({ policies: { limit: 1, windowMs: 1000 }, hook: 'onRequest' } as never, ['hook'])).not.toThrow();
  });

  it('defaults the key to the socket address', async () => {
    const { handler } = make({});
    expect((await handler.handle(input({ id: 'a' })))?.decision.key).toBe('ip:192.0.2.1');
  });

  it('counts requests without a usable key in one shared bucket and warns once', async () => {
    const { handler, logger } = make({ key: (req) => req.user as string });
    const results = [];
    for (const user of [undefined, '', 42]) results.push(await handler.handle(input({ id: 'a', user })));
    expect(results.map((r) => r?.decision.key)).toEqual([UNKEYED_KEY, UNKEYED_KEY, UNKEYED_KEY]);
    expect(results.map((r) => r?.plan.status)).toEqual([undefined, undefined, 429]);
    expect(logger.warnings.filter((w) => w.startsWith('WRN_RL_UNKEYED'))).toHaveLength(1);
  });

  it('charges the default cost for a bad cost and warns once', async () => {
    const { handler, logger } = make({ cost: (req) => req.weight as number });
    for (const weight of [Number.NaN, -1, 0, '2', 0.0001]) {
      expect((await handler.handle(input({ id: String(weight), weight })))?.decision.cost).toBe(1);
      await handler.limiter.reset('ip:192.0.2.1');
    }
    expect((await handler.handle(input({ id: 'ok', weight: 2 })))?.decision.cost).toBe(2);
    expect(logger.warnings.filter((w) => w.startsWith('WRN_RL_INVALID_COST'))).toHaveLength(1);
  });

  it('skips without counting', async () => {
    const { handler } = make({ skip: async (req) => req.id === 'health' });
    expect(await handler.handle(input({ id: 'health' }))).toBeUndefined();
    expect(handler.limiter.stats().requests).toBe(0);
  });

  it('reports every decision and sums shadow-mode would-be rejections in one line per interval', async () => {
    const seen: Decision[] = [];
    const { handler, logger } = make({ mode: 'shadow', onDecision: (d) => seen.push(d) });
    const plans = [];
    for (let i = 0; i < 4; i++) plans.push((await handler.handle(input({ id: String(i) })))?.plan);
    expect(plans.every((p) => p?.action === 'pass' && p.headers.length === 0)).toBe(true);
    expect(seen.map((d) => d.limited)).toEqual([false, false, true, true]);
    expect(logger.warnings.filter((w) => w.includes('WRN_RL_SHADOW_LIMITED'))).toHaveLength(0);
    handler.close();
    const summary = logger.warnings.filter((w) => w.includes('WRN_RL_SHADOW_LIMITED'));
    expect(summary).toHaveLength(1);
    expect(summary[0]).toContain('"wouldReject":2');
  });

  it('counts a request once in the shadow summary, and says when the enforced policies rejected it anyway', async () => {
    // Shadow mode and a stricter candidate: the third and fourth requests are over both.
    const both = make({ mode: 'shadow', shadowPolicies: { name: 'cand', algorithm: 'fixed-window', limit: 2, windowMs: 60_000 } });
    for (let i = 0; i < 4; i++) await both.handler.handle(input({ id: String(i) }));
    both.handler.close();
    const [line] = both.logger.warnings.filter((w) => w.includes('WRN_RL_SHADOW_LIMITED'));
    expect(line).toContain('would have rejected 2 requests in the last interval; all were let through');
    expect(line).toContain('"wouldReject":2,"candidateRejections":2,"byPolicy":{"default":2,"cand":2}');
    // Enforced, with a candidate as strict as the enforced policy: its would-be rejections got 429 anyway.
    const enforced = make({ shadowPolicies: { name: 'cand', algorithm: 'fixed-window', limit: 1, windowMs: 60_000 } });
    for (let i = 0; i < 4; i++) await enforced.handler.handle(input({ id: String(i) }));
    enforced.handler.close();
    const [second] = enforced.logger.warnings.filter((w) => w.includes('WRN_RL_SHADOW_LIMITED'));
    expect(second).toContain('would have rejected 3 requests in the last interval; 1 was let through, the other 2 were rejected anyway');
  });

  it('a shadow candidate may carry a key of its own', async () => {
    const seen: Decision[] = [];
    const { handler } = make({
      shadowPolicies: { name: 'cand', algorithm: 'fixed-window', limit: 1, windowMs: 60_000, key: (req: FakeReq) => `user:${req.id}` },
      onDecision: (d) => seen.push(d),
    });
    // Two addresses, one user: the candidate counts the user, the enforced policy each address.
    await handler.handle(input({ id: 'u' }, '192.0.2.1'));
    await handler.handle(input({ id: 'u' }, '192.0.2.2'));
    expect(seen.map((d) => [d.allowed, d.shadow?.allowed])).toEqual([
      [true, true],
      [true, false],
    ]);
  });

  it('refuses a keyed candidate named like an enforced policy (it would re-key that policy), and takes keys in shadow: { policies } too', async () => {
    const byUser = (req: FakeReq) => `user:${req.id}`;
    const err = (() => {
      try {
        make({ shadowPolicies: { algorithm: 'fixed-window', limit: 100, windowMs: 60_000, key: byUser } });
      } catch (e) {
        return e as RateLimitConfigError;
      }
      return undefined;
    })();
    expect(err).toMatchObject({ code: 'ERR_RL_INVALID_OPTION', option: 'shadowPolicies.key' });
    expect(err?.message).toContain("candidate named 'default' like an enforced policy");
    const seen: Decision[] = [];
    const { handler } = make({
      shadow: { policies: [{ name: 'cand', algorithm: 'fixed-window', limit: 1, windowMs: 60_000, key: byUser }] },
      onDecision: (d: Decision) => seen.push(d),
    } as unknown as Partial<RateLimitOptions<FakeReq>>);
    await handler.handle(input({ id: 'u' }, '192.0.2.1'));
    await handler.handle(input({ id: 'u' }, '192.0.2.2'));
    expect(seen.map((d) => d.shadow?.allowed)).toEqual([true, false]);
  });

  it('is silenced by validate, for the shadow summary too', async () => {
    for (const validate of [false, { WRN_RL_SHADOW_LIMITED: false }] as const) {
      const { handler, logger } = make({ mode: 'shadow', validate });
      for (let i = 0; i < 4; i++) await handler.handle(input({ id: String(i) }));
      handler.close();
      expect(logger.warnings).toEqual([]);
    }
  });

  it('lets onLimited replace the body but keeps status and headers; a throwing hook falls back to problem+json', async () => {
    let calls = 0;
    const { handler, logger } = make({
      onLimited: ({ problem }) => {
        calls += 1;
        if (calls === 2) throw new Error('boom');
        return { body: { error: problem.title } };
      },
      problem: { extend: (req) => ({ instance: `/requests/${req.id}`, status: 200 }) },
    });
    await handler.handle(input({ id: 'a' }));
    await handler.handle(input({ id: 'b' }));
    const custom = await handler.handle(input({ id: 'c' }));
    expect(custom?.plan.status).toBe(429);
    expect(custom?.plan.body).toBe('{"error":"Too Many Requests"}');
    expect(Object.fromEntries(custom?.plan.headers ?? [])).toMatchObject({ 'Content-Type': 'application/json', 'Retry-After': '20' });
    const fallback = await handler.handle(input({ id: 'd' }));
    expect(JSON.parse(fallback?.plan.body as string)).toMatchObject({ status: 429, instance: '/requests/d' });
    expect(logger.warnings.filter((w) => w.startsWith('WRN_RL_HOOK_FAILED'))).toHaveLength(1);
  });

  it('sends the default body when a hook returns what cannot be sent, never letting the request through', async () => {
    const unhandled = await unhandledDuring(async () => {
      const circular: Record<string, unknown> = {};
      circular.self = circular;
      const cases: Partial<RateLimitOptions<FakeReq>>[] = [
        { problem: { extend: () => ({ big: 10n }) } },
        { problem: { extend: () => ({ circular }) } },
        {
          problem: {
            extend: (async () => {
              throw new Error('async extend');
            }) as never,
          },
        },
        { onLimited: () => ({ body: 'slow down', contentType: 'text/plain; note=\u201cquoted\u201d' }) },
        { onLimited: () => ({ body: 'slow down', contentType: 'text/plain\r\nX-Injected: 1' }) },
        // Latin-1: Fastify sent it as one byte, Express and Koa as two (UTF-8).
        { onLimited: () => ({ body: 'slow down', contentType: 'text/plain; note=caf\u00e9' }) },
        // Not { body }: express-rate-limit's `message` string, a number, a body left undefined.
        { onLimited: (() => 'Too many requests, slow down') as never },
        { onLimited: (() => 42) as never },
        { onLimited: () => ({ body: undefined }) },
      ];
      for (const options of cases) {
        const { handler, logger } = make(options);
        await handler.handle(input({ id: 'a' }));
        await handler.handle(input({ id: 'b' }));
        const limited = await handler.handle(input({ id: 'c' }));
        expect(limited?.plan.status).toBe(429);
        expect(JSON.parse(limited?.plan.body as string)).toMatchObject({ status: 429, title: 'Too Many Requests' });
        expect(Object.fromEntries(limited?.plan.headers ?? [])['Content-Type']).toBe('application/problem+json');
        expect(logger.warnings.filter((w) => w.startsWith('WRN_RL_HOOK_FAILED'))).toHaveLength(1);
      }
    });
    expect(unhandled).toEqual([]);
  });

  it('survives a throwing onDecision', async () => {
    const { handler, logger } = make({
      onDecision: () => {
        throw new Error('metrics down');
      },
    });
    expect((await handler.handle(input({ id: 'a' })))?.plan.action).toBe('pass');
    expect(logger.warnings[0]).toMatch(/^WRN_RL_HOOK_FAILED/);
  });

  it('warns once per failing callback: a key that fails after onDecision did gets its own line, with its error', async () => {
    let keyFails = false;
    const { handler, logger } = make({
      onDecision: () => {
        throw new Error('metrics down');
      },
      key: (req) => {
        if (keyFails) throw new Error('no session store');
        return req.id;
      },
    });
    await handler.handle(input({ id: 'a' }));
    await handler.handle(input({ id: 'b' }));
    keyFails = true;
    await handler.handle(input({ id: 'c' }));
    await handler.handle(input({ id: 'd' }));
    const hooks = logger.warnings.filter((w) => w.startsWith('WRN_RL_HOOK_FAILED'));
    // Before: one line for the whole middleware, onDecision's; the key's error was never logged.
    expect(hooks).toHaveLength(2);
    expect(hooks[0]).toContain('"hook":"onDecision"');
    expect(hooks[1]).toContain('"hook":"key"');
    expect(hooks[1]).toContain('no session store');
  });

  it('survives an async onDecision that rejects: a warning, never an unhandled rejection', async () => {
    const unhandled = await unhandledDuring(async () => {
      const { handler, logger } = make({
        onDecision: async () => {
          throw new Error('metrics down');
        },
      });
      expect((await handler.handle(input({ id: 'a' })))?.plan.action).toBe('pass');
      await new Promise((r) => setImmediate(r));
      expect(logger.warnings).toHaveLength(1);
      expect(logger.warnings[0]).toMatch(/^WRN_RL_HOOK_FAILED: onDecision threw or rejected/);
    });
    expect(unhandled).toEqual([]);
  });

  it('uses the request logger when no logger is configured, warning once across loggers', async () => {
    const handler = createRateLimitHandler<FakeReq>({ policies: { limit: 5, windowMs: 1000 }, key: () => undefined });
    const a = recorder();
    const b = recorder();
    await handler.handle({ ...input({ id: 'a' }), logger: a });
    await handler.handle({ ...input({ id: 'b' }), logger: b });
    expect([a.warnings.length, b.warnings.length]).toEqual([1, 0]);
    handler.checkTrustProxy("Express 'trust proxy'", true, b);
    handler.checkTrustProxy("Express 'trust proxy'", true, b);
    expect(b.warnings).toHaveLength(1);
    expect(b.warnings[0]).toMatch(/^WRN_RL_PERMISSIVE_TRUST_PROXY: Express 'trust proxy' lets a client choose its own IP/);
  });
});
