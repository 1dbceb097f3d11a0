/**
 * @module Issue 12: every decision is published on diagnostics_channel `tollgate:decision` with the
 * framework's request object and the route template, over real HTTP on Express, Fastify and Koa.
 */
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createLimiter, DECISION_CHANNEL, type DecisionMessage } from '@tollgate/core';
import { afterEach, describe, expect, it } from 'vitest';
import { hit, ROUTE, type RunningApp, STARTERS } from './apps.js';

const options = { policies: [{ name: 'per-client', limit: 2, windowMs: 60_000 }] };

describe.each(Object.entries(STARTERS))('tollgate:decision on %s', (name, start) => {
  let app: RunningApp | undefined;
  const seen: DecisionMessage[] = [];
  const listener = (message: unknown) => {
    seen.push(message as DecisionMessage);
  };
  afterEach(async () => {
    unsubscribe(DECISION_CHANNEL, listener);
    seen.length = 0;
    await app?.close();
  });

  it('publishes each decision with the request object and the route template', async () => {
    app = await start(options);
    subscribe(DECISION_CHANNEL, listener);
    expect(await hit(app.url, 3)).toEqual([200, 200, 429]);
    expect(seen.map((m) => m.decision.reason)).toEqual(['allowed', 'allowed', 'limited']);
    for (const m of seen) {
      expect(m.route).toBe(ROUTE);
      expect(m.store).toBe('memory');
      expect(m.decision.policy).toBe('per-client');
    }
    const request = seen[0]?.request as Record<string, unknown>;
    // The framework's own object: Express req, Fastify request, Koa ctx.
    if (name === 'express') expect(request.originalUrl).toBe('/api/items/42');
    if (name === 'fastify') expect((request.routeOptions as { url: string }).url).toBe(ROUTE);
    if (name === 'koa') expect(request.originalUrl).toBe('/api/items/42');
  });
});

describe('tollgate:decision without HTTP', () => {
  it('publishes direct check() calls with no request and no route', async () => {
    const seen: DecisionMessage[] = [];
    const listener = (message: unknown) => seen.push(message as DecisionMessage);
    subscribe(DECISION_CHANNEL, listener);
    try {
      const limiter = createLimiter({ policies: [{ limit: 1, windowMs: 1000 }] });
      await limiter.check('k');
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ request: undefined, route: undefined, store: 'memory', limiter: undefined });
      expect(seen[0]?.decision.key).toBe('k');
      // A named limiter's messages carry its name, so a subscriber tells the limiters of a process apart.
      await createLimiter({ name: 'login', policies: [{ limit: 1, windowMs: 1000 }] }).check('k');
      expect(seen[1]).toMatchObject({ store: 'memory', limiter: 'login' });
    } finally {
      unsubscribe(DECISION_CHANNEL, listener);
    }
  });

  it('publishes nothing, and builds no message, when nobody subscribes', async () => {
    const { channel } = await import('node:diagnostics_channel');
    expect(channel(DECISION_CHANNEL).hasSubscribers).toBe(false);
    const limiter = createLimiter({ policies: [{ limit: 1, windowMs: 1000 }] });
    expect((await limiter.check('k')).allowed).toBe(true);
  });
});
