/**
 * @module The Fastify example app: one plugin-wide policy, a stricter limiter on `/api/search`, and a
 * health check that opts out.
 */
import type { Clock } from '@tollgate/core';
import fastifyRateLimit from '@tollgate/fastify';
import Fastify, { type FastifyInstance } from 'fastify';

export async function createApp(options: { clock?: Clock; logger?: boolean } = {}): Promise<FastifyInstance> {
  const app = Fastify({ logger: options.logger ?? false });
  // Register before the routes: the plugin attaches its hook to each route as it is declared.
  await app.register(fastifyRateLimit, {
    policies: { name: 'default', algorithm: 'gcra', limit: 5, windowMs: 10_000 },
    clock: options.clock,
  });
  app.get('/health', { config: { rateLimit: false } }, async () => ({ ok: true }));
  app.get('/api/hello', async (request) => ({ hello: 'world', remaining: request.rateLimit?.remaining }));
  app.get(
    '/api/search',
    { config: { rateLimit: { policies: { name: 'search', algorithm: 'sliding-log', limit: 2, windowMs: 10_000 } } } },
    async () => ({ results: [] }),
  );
  return app;
}
