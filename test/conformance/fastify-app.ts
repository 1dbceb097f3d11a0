/**
 * @module The conformance app on Fastify: the plugin registered with the global options; per-route
 * limiters through `config.rateLimit` (an options object, or `false` for none).
 */
import fastifyRateLimit from '@tollgate/fastify';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { type MakeApp, routeBody } from './suite.js';

export const makeFastifyApp: MakeApp = async (spec) => {
  const app = Fastify(spec.trustProxy === undefined ? {} : { trustProxy: spec.trustProxy as never });
  const first = spec.headersFirst;
  if (first !== undefined) {
    app.addHook('onRequest', (_request, reply, done) => {
      for (const [name, value] of Object.entries(first)) reply.header(name, value);
      done();
    });
  }
  const message = spec.statusMessageFirst;
  if (message !== undefined) {
    app.addHook('onRequest', (_request, reply, done) => {
      reply.raw.statusMessage = message;
      done();
    });
  }
  const start = spec.startFirst;
  if (start !== undefined) {
    app.addHook('onRequest', (_request, reply, done) => {
      if (start.mode === 'stream') {
        reply.raw.writeHead(200, { 'content-type': 'text/plain' });
        reply.raw.write('streaming;');
      } else {
        setTimeout(() => {
          if (!reply.sent && !reply.raw.headersSent) reply.code(503).send('timed out');
        }, start.afterMs);
      }
      done();
    });
  }
  let handled = 0;
  const route = async (request: FastifyRequest, reply: FastifyReply) => {
    handled += 1;
    if (reply.sent || reply.raw.headersSent) {
      if (!reply.raw.writableEnded) reply.raw.end();
      return reply.hijack();
    }
    return routeBody(request.rateLimit);
  };
  await app.register(fastifyRateLimit, spec.global);
  app.get('/', route);
  app.get('/other', route);
  // HEAD declared, not added by Fastify for the GET (its own HEAD route recomputes Content-Length).
  app.route({ method: ['GET', 'HEAD'], url: '/head', handler: route });
  app.get('/twice', { preHandler: app.rateLimit.hook }, route);
  for (const [path, options] of Object.entries(spec.routes ?? {})) app.get(path, { config: { rateLimit: options } }, route);
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { server: app.server, handled: () => handled, close: () => app.close() };
};
