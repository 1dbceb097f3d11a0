import type { Decision } from '@tollgate/core';
import Fastify, { type FastifyContextConfig } from 'fastify';
import { expectTypeOf, test } from 'vitest';
import { type FastifyRateLimitRouteOptions, fastifyRateLimit } from './index.js';

test('route config and request decoration are typed by declaration merging', () => {
  const app = Fastify();
  app.register(fastifyRateLimit, { policies: { limit: 10, windowMs: 1000 }, hook: 'preHandler' });
  app.get('/', { config: { rateLimit: { policies: { limit: 1, windowMs: 1000 } } } }, async (request) => {
    expectTypeOf(request.rateLimit).toEqualTypeOf<Decision | undefined>();
    return 'ok';
  });
  app.get('/open', { config: { rateLimit: false } }, async () => 'ok');
  expectTypeOf<FastifyContextConfig['rateLimit']>().toEqualTypeOf<FastifyRateLimitRouteOptions | false | undefined>();
  // @ts-expect-error: a route's rateLimit is options or false, nothing else.
  const bad: FastifyContextConfig = { rateLimit: true };
  expectTypeOf(bad).toEqualTypeOf<FastifyContextConfig>();
  // @ts-expect-error: hook must be a request hook.
  app.register(fastifyRateLimit, { policies: { limit: 1, windowMs: 1000 }, hook: 'onSend' });
  expectTypeOf<FastifyRateLimitRouteOptions['headers']>().toEqualTypeOf<
    'draft-11' | 'draft-7' | 'draft-6' | 'legacy' | false | readonly ('draft-11' | 'draft-7' | 'draft-6' | 'legacy')[] | undefined
  >();
  expectTypeOf(app.rateLimit.limiter.stats).returns.toHaveProperty('shadowOnly');
});
