/**
 * @module The route template a decision reports (metrics, `tollgate:decision`) is Fastify's own
 * `request.routeOptions.url`, though the hook takes it from `onRoute` (reading `routeOptions` per request
 * builds an object): under a prefix, with and without the trailing slash Fastify also registers.
 */
import { channel } from 'node:diagnostics_channel';
import Fastify from 'fastify';
import { expect, it } from 'vitest';
import { fastifyRateLimit } from './index.js';

it("reports Fastify's route template, prefixes and trailing slashes included", async () => {
  const seen: [string | undefined, string | undefined][] = [];
  const decisions = channel('tollgate:decision');
  const listen = (message: unknown) => {
    const m = message as { route: string | undefined; request: { routeOptions: { url: string | undefined } } };
    seen.push([m.route, m.request.routeOptions.url]);
  };
  decisions.subscribe(listen);
  const app = Fastify();
  try {
    await app.register(
      async (scope) => {
        await scope.register(fastifyRateLimit, { policies: [{ limit: 100, windowMs: 60_000 }] });
        scope.get('/', async () => 'index');
        scope.get('/x/:id', async () => 'item');
      },
      { prefix: '/p' },
    );
    await app.register(async (scope) => {
      await scope.register(fastifyRateLimit, { policies: [{ limit: 100, windowMs: 60_000 }], name: 'other' });
      scope.get('/r/', async () => 'slash');
    });
    for (const url of ['/p', '/p/', '/p/x/1', '/r/']) expect((await app.inject({ url })).statusCode).toBe(200);
  } finally {
    decisions.unsubscribe(listen);
    await app.close();
  }
  // Fastify serves `/p/` by a second route whose template is the prefix.
  expect(seen.map(([route]) => route)).toEqual(['/p', '/p', '/p/x/:id', '/r/']);
  for (const [route, own] of seen) expect(route).toBe(own);
});
