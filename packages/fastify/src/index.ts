/**
 * @module @tollgate/fastify: a fastify-plugin plugin. Register it before the routes it should cover
 * (it attaches a hook to each route from `onRoute`); a route opts out with `config: { rateLimit: false }`
 * or gets its own limiter with `config: { rateLimit: {...} }`, merged over the plugin options.
 * Registered inside an encapsulated context, it covers that context's routes only.
 */
import {
  createRateLimitHandler,
  type Decision,
  type Limiter,
  RateLimitConfigError,
  type RateLimitHandler,
  type RateLimitOptions,
  waitUnlessClosed,
} from '@tollgate/core';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';

/** The request hooks the limiter can run in. `onRequest` (the default) rejects before the body is read. */
export type RateLimitHook = 'onRequest' | 'preParsing' | 'preValidation' | 'preHandler';
const HOOKS: readonly RateLimitHook[] = ['onRequest', 'preParsing', 'preValidation', 'preHandler'];

export interface FastifyRateLimitOptions extends RateLimitOptions<FastifyRequest> {
  /** The hook the limiter runs in. Defaults to `'onRequest'`. */
  hook?: RateLimitHook;
  /** `false`: only routes with `config.rateLimit` set to an object are limited. Defaults to `true`. */
  global?: boolean;
}

/** `config.rateLimit` of a route: options merged over the plugin's (a new limiter for the route), or `false`. */
export type FastifyRateLimitRouteOptions = Partial<Omit<FastifyRateLimitOptions, 'global'>>;

/** What the plugin decorates the instance with. */
export interface FastifyRateLimitDecorator {
  /** The limiter shared by the routes without their own `config.rateLimit` (for `stats()`, `reset(key)`). */
  readonly limiter: Limiter;
  /** Route limiters by `"METHOD url"`. */
  readonly routes: ReadonlyMap<string, Limiter>;
  /**
   * The shared limiter as a hook, for what `onRoute` never sees, e.g. 404s:
   * `app.setNotFoundHandler({ preHandler: app.rateLimit.hook }, handler)`. A request already counted
   * by this registration (a route that calls `reply.callNotFound()`) is not counted again.
   */
  readonly hook: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    rateLimit?: FastifyRateLimitRouteOptions | false;
  }
  interface FastifyRequest {
    /** The decision of the limiter that ran on this request; undefined when skipped or not limited. */
    rateLimit: Decision | undefined;
  }
  interface FastifyInstance {
    rateLimit: FastifyRateLimitDecorator;
  }
}

const ADAPTER_KEYS = ['hook', 'global'];

function hookOf(value: unknown, path: string): RateLimitHook {
  if (value === undefined) return 'onRequest';
  if (!HOOKS.includes(value as RateLimitHook)) {
    throw new RateLimitConfigError('ERR_RL_INVALID_HOOK', path, `must be one of ${HOOKS.map((h) => `'${h}'`).join(', ')}`, value);
  }
  return value as RateLimitHook;
}

function createHook(handler: RateLimitHandler<FastifyRequest>, ran: symbol) {
  return async function tollgateRateLimit(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const marks = request as unknown as Record<symbol, boolean>;
    if (marks[ran] === true) return undefined;
    marks[ran] = true;
    const handled = await handler.handle({
      request,
      remoteAddress: request.raw.socket?.remoteAddress,
      headers: request.headers,
      method: request.method,
      url: request.url,
      route: request.routeOptions.url,
      logger: request.log,
    });
    if (handled === undefined) return undefined;
    const { decision, plan } = handled;
    request.rateLimit = decision;
    for (const [name, value] of plan.headers) reply.header(name, value);
    // A Buffer, so Fastify sends the Content-Type exactly as planned (it appends a charset to strings).
    if (plan.action === 'reject') return reply.code(plan.status ?? 429).send(Buffer.from(plan.body ?? ''));
    if (plan.delayMs > 0 && !(await waitUnlessClosed(plan.delayMs, reply.raw))) return reply.hijack();
    return undefined;
  };
}

async function tollgatePlugin(fastify: FastifyInstance, options: FastifyRateLimitOptions): Promise<void> {
  const base = createRateLimitHandler<FastifyRequest>(options, ADAPTER_KEYS);
  const hook = hookOf(base.config.adapterOptions.hook, 'hook');
  const global = base.config.adapterOptions.global ?? true;
  if (typeof global !== 'boolean') throw new RateLimitConfigError('ERR_RL_INVALID_OPTION', 'global', 'must be a boolean', global);
  const ran = Symbol('tollgate.rateLimitRan');
  const routes = new Map<string, Limiter>();
  fastify.decorateRequest(ran, false);
  if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', undefined);
  if (!fastify.hasDecorator('rateLimit')) fastify.decorate('rateLimit', { limiter: base.limiter, routes, hook: createHook(base, ran) });

  fastify.addHook('onRoute', (route: RouteOptions) => {
    const own = route.config?.rateLimit;
    if (own === false || (own === undefined && !global)) return;
    if (own !== undefined && (own === null || typeof own !== 'object' || Array.isArray(own))) {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_ROUTE_CONFIG',
        `${route.method} ${route.url} config.rateLimit`,
        'must be an options object or false',
        own,
      );
    }
    const path = `${route.method} ${route.url} config.rateLimit`;
    const handler = own === undefined ? base : createRateLimitHandler<FastifyRequest>({ ...options, ...own }, ADAPTER_KEYS);
    if (own !== undefined) routes.set(`${String(route.method)} ${route.url}`, handler.limiter);
    const at = own?.hook === undefined ? hook : hookOf(own.hook, `${path}.hook`);
    const existing = route[at];
    const hooks = existing === undefined ? [] : Array.isArray(existing) ? existing : [existing];
    (route as unknown as Record<string, unknown>)[at] = [...hooks, createHook(handler, ran)];
  });
  fastify.addHook('onClose', async () => {
    await Promise.all([base.limiter, ...routes.values()].map((l) => l.close()));
  });
}

/** The plugin: `await app.register(fastifyRateLimit, { policies: [...] })`, before the routes it covers. */
export const fastifyRateLimit = fp(tollgatePlugin, { fastify: '5.x', name: '@tollgate/fastify' });
export default fastifyRateLimit;
