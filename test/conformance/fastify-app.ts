/**
 * @module The conformance app on Fastify: the plugin registered with the global options; per-route
 * limiters through `config.rateLimit` (an options object, or `false` for none).
 */
import fastifyRateLimit from '@tollgate/fastify';
import Fastify from 'fastify';
import { type MakeApp, routeBody } from './suite.js';

export const makeFastifyApp: MakeApp = async (spec) => {
  const app = Fastify();
  let handled = 0;
  const route = async (request: { rateLimit: Parameters<typeof routeBody>[0] }) => {
    handled += 1;
    return routeBody(request.rateLimit);
  };
  await app.register(fastifyRateLimit, spec.global);
  app.get('/', route);
  app.get('/other', route);
  for (const [path, options] of Object.entries(spec.routes ?? {})) app.get(path, { config: { rateLimit: options } }, route);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { server: app.server, handled: () => handled, close: () => app.close() };
};
