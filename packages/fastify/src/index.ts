/**
 * @module @tollgate/fastify: a fastify-plugin plugin. Register it before the routes it should cover
 * (it attaches a hook to each route from `onRoute`); a route opts out with `config: { rateLimit: false }`
 * or gets its own limiter with `config: { rateLimit: {...} }`, merged over the plugin options (a route's
 * `policies` replace the plugin's `plans`, and its `plans` the plugin's `policies`: `mergeRouteOptions`).
 * Registered inside an encapsulated context, it covers that context's routes only. A route declared
 * before the plugin is not limited and is warned about (`WRN_RL_ROUTES_BEFORE_REGISTER`) once its first
 * request is answered; the check that does it is only there when the router held routes as the plugin
 * was registered (otherwise every request would pay for Fastify's response listeners). Logs go to the user's `logger`, else `request.log` / `fastify.log`, else (when `Fastify()`
 * has no logger, whose default writes nowhere) `console`.
 */

import { createHash } from 'node:crypto';
import { type Decision, type Limiter, type LoadShedder, RateLimitConfigError, type RateLimitOptions } from '@tollgate/core';
import {
  createRateLimitHandler,
  isPermissiveTrust,
  isPromiseLike,
  OLDER_SPELLINGS,
  type RateLimitHandler,
  type RawResponse,
  type ResponseTarget,
  setReasonPhrase,
} from '@tollgate/core/adapter';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';

/** The request hooks the limiter can run in. `onRequest` (the default) rejects before the body is read. */
export type RateLimitHook = 'onRequest' | 'preParsing' | 'preValidation' | 'preHandler';
const HOOKS: readonly RateLimitHook[] = ['onRequest', 'preParsing', 'preValidation', 'preHandler'];

/** The plugin's options; user callbacks (`key`, `cost`, `skip`, hooks) receive the Fastify `request`, `requestWasSuccessful` `reply.raw` too. */
export interface FastifyRateLimitOptions extends RateLimitOptions<FastifyRequest, FastifyReply['raw']> {
  /** The hook the limiter runs in. Defaults to `'onRequest'`. */
  hook?: RateLimitHook;
  /** `false`: only routes with `config.rateLimit` set to an object are limited. Defaults to `true`. */
  global?: boolean;
}

/**
 * `config.rateLimit` of a route: options merged over the plugin's (a new limiter for the route), or `false`.
 * Its `policies` replace the plugin's `plans` (with `plan`, `defaultPlan`, `unknownPlan`); its `plans` the
 * plugin's `policies`.
 */
export type FastifyRateLimitRouteOptions = Partial<Omit<FastifyRateLimitOptions, 'global'>>;

/** What the plugin decorates the instance with. */
export interface FastifyRateLimitDecorator {
  /** The limiter shared by the routes without their own `config.rateLimit` (for `stats()`, `reset(key)`). */
  readonly limiter: Limiter;
  /** The server-wide load shedder of the `loadShedding` option (`shedder.state()`); undefined when none. */
  readonly shedder: LoadShedder<FastifyRequest> | undefined;
  /** Route limiters by `"METHOD url"`, followed by the route's constraints as JSON when it has some. */
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

/**
 * Set on the instance a registration was made on (own property; a child context inherits its parent's by
 * its prototype): the registration nearest to a context, and what its `fastify.rateLimit` reads.
 */
const NEAREST = Symbol('tollgate.registration');
const DECORATOR = Symbol('tollgate.decorator');

interface Marked {
  [NEAREST]?: Registration;
  [DECORATOR]?: FastifyRateLimitDecorator;
}

/** What `fastify.printRoutes()` answers while the router holds no route (find-my-way's `prettyPrint`). */
const EMPTY_ROUTER = '(empty tree)';

/** The plugin options that belong to its `plans`: a route with its own `policies` takes none of them. */
const PLAN_KEYS = ['plans', 'plan', 'defaultPlan', 'unknownPlan'] as const;

/**
 * A route's `config.rateLimit` over the plugin's options. Plain keys: the route's win. `policies` and
 * `plans` are one choice, not two keys (the core takes one or the other): a route that gives `policies`
 * drops the plugin's `plans`, `plan`, `defaultPlan` and `unknownPlan`; a route that gives `plans` drops
 * the plugin's `policies`, keeps its `plan` (the same tiers, this route's limits) and keeps its
 * `defaultPlan`/`unknownPlan` only when the route's plans have a plan of that name.
 */
function mergeRouteOptions(plugin: FastifyRateLimitOptions, own: FastifyRateLimitRouteOptions): FastifyRateLimitOptions {
  const merged: Record<string, unknown> = { ...plugin };
  if (own.policies !== undefined) for (const k of PLAN_KEYS) delete merged[k];
  if (own.plans !== undefined) {
    delete merged.policies;
    const plans: unknown = own.plans;
    for (const k of ['defaultPlan', 'unknownPlan'] as const) {
      const name = merged[k];
      const named = typeof name === 'string' && plans !== null && typeof plans === 'object' && Object.hasOwn(plans, name);
      if (!named) delete merged[k];
    }
  }
  // A route's option replaces the plugin's under either spelling (`logRate` and `logLimit` are one option).
  for (const [old, current] of Object.entries(OLDER_SPELLINGS)) {
    if (own[old as keyof typeof own] !== undefined || own[current as keyof typeof own] !== undefined) {
      delete merged[old];
      delete merged[current];
    }
  }
  return { ...merged, ...own } as FastifyRateLimitOptions;
}

function hookOf(value: unknown, path: string): RateLimitHook {
  if (value === undefined) return 'onRequest';
  if (!HOOKS.includes(value as RateLimitHook)) {
    throw new RateLimitConfigError('ERR_RL_INVALID_HOOK', path, `must be one of ${HOOKS.map((h) => `'${h}'`).join(', ')}`, value);
  }
  return value as RateLimitHook;
}

/** The last 429 body sent and its bytes: a client over its limit gets the same body until `Retry-After` ticks down. */
let lastBody = '';
let lastBuffer = Buffer.alloc(0);

/**
 * The body as bytes (a string would get `; charset=utf-8` appended to the problem+json Content-Type), encoded
 * once per distinct body rather than once per rejection. Buffers sent are only read.
 */
function bodyBuffer(body: string): Buffer {
  if (body !== lastBody) {
    lastBuffer = Buffer.from(body);
    lastBody = body;
  }
  return lastBuffer;
}

/**
 * How the core writes to one Fastify reply: one object per request, its methods on the prototype, where
 * five closures per request would each cost an allocation (and, compiled with names kept, a
 * `defineProperty`).
 */
class ReplyTarget implements ResponseTarget {
  readonly raw: RawResponse;
  constructor(
    private readonly request: FastifyRequest,
    private readonly reply: FastifyReply,
  ) {
    this.raw = reply.raw;
  }
  sent(): boolean {
    return this.reply.sent;
  }
  attach(decision: Decision): void {
    this.request.rateLimit = decision;
  }
  header(name: string, value: string): void {
    this.reply.header(name, value);
  }
  /** Fastify keeps `reply.header`'s headers apart from the Node response's until it sends: both go. */
  remove(names: Pick<ReadonlySet<string>, 'has'>): void {
    for (const name of Object.keys(this.reply.getHeaders())) {
      if (!names.has(name)) continue;
      this.reply.removeHeader(name);
      this.reply.raw.removeHeader(name);
    }
  }
  reject(status: number, body: string): void {
    // `reply.code` sets the code alone.
    setReasonPhrase(this.reply.raw, status, this.request.raw.httpVersionMajor);
    this.reply.code(status).send(bodyBuffer(body));
  }
  abandon(): void {
    if (!this.reply.sent) this.reply.hijack();
  }
}

/**
 * Runs the limiter on one request and calls `done` once it is decided: before returning when the
 * decision was synchronous (the common case), so the request takes no microtask turn here. `url`: the
 * route template, when the hook was attached by `onRoute`. `done` is called whatever the outcome, as
 * Fastify's own runner does after a hook's promise: it skips the rest of the chain once the reply is sent.
 */
function limitRequest(
  handler: RateLimitHandler<FastifyRequest>,
  reg: Registration,
  url: string | undefined,
  request: FastifyRequest,
  reply: FastifyReply,
  done: () => void,
): void {
  const marks = request as unknown as Record<symbol, boolean>;
  if (marks[reg.ran] === true) {
    done();
    return;
  }
  marks[reg.ran] = true;
  if (!reg.trustChecked) reg.checkTrust(request);
  const outcome = handler.run(
    {
      request,
      raw: request.raw,
      remoteAddress: request.raw.socket?.remoteAddress,
      headers: request.headers,
      method: request.method,
      url: request.url,
      // `request.routeOptions` builds a fresh object of a dozen fields on every read.
      route: url ?? request.routeOptions.url,
      logger: request.log,
    },
    new ReplyTarget(request, reply),
  );
  if (isPromiseLike(outcome)) outcome.then(() => done());
  else done();
}

/** What the hooks of one registration share. */
interface Registration {
  /** Set on a request once a hook of this registration has run on it. */
  readonly ran: symbol;
  /** Whether Fastify's `trustProxy` has been probed (`checkTrust`, on the first request limited). */
  trustChecked: boolean;
  checkTrust(request: FastifyRequest): void;
}

/** A route's hook in Fastify's callback style (`preParsing` hooks get the payload stream before `done`). */
function createHook(handler: RateLimitHandler<FastifyRequest>, reg: Registration, at: RateLimitHook, url: string) {
  if (at === 'preParsing') {
    return function tollgateRateLimit(request: FastifyRequest, reply: FastifyReply, _payload: unknown, done: () => void): void {
      limitRequest(handler, reg, url, request, reply, done);
    };
  }
  return function tollgateRateLimit(request: FastifyRequest, reply: FastifyReply, done: () => void): void {
    limitRequest(handler, reg, url, request, reply, done);
  };
}

/**
 * Asks Fastify's own `request.ip` (built from `trustProxy`, whatever its spelling) how far it believes a
 * forged X-Forwarded-For chain, on a probe request made from the real request's prototype.
 */
function isPermissiveFastifyTrust(request: FastifyRequest): boolean {
  const proto = Object.getPrototypeOf(request) as object;
  return isPermissiveTrust((remote, forwardedFor) => {
    const probe = Object.create(proto) as { raw: unknown; headers: unknown; ip: string | undefined };
    const headers = { 'x-forwarded-for': forwardedFor };
    Object.defineProperty(probe, 'raw', { value: { socket: { remoteAddress: remote }, headers } });
    Object.defineProperty(probe, 'headers', { value: headers });
    return probe.ip;
  });
}

/** `part` in the characters a limiter name allows: every other character (and `|`, `~`) as `~` and four hex digits, so two parts never read alike. */
function nameSafe(part: string): string {
  return part.replace(/[^!-9;-z]/g, (c) => `~${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * A limiter name for a route's own limiter: the plugin's name (or 'route'), the route's methods, its URL
 * and its constraints (host, version) if any, each in the characters a name allows (`nameSafe`), hashed
 * past 64 characters. GET and POST of one URL, `/users/:id` and `/users/~id`, or one URL on two hosts,
 * never share a name, so never a budget on a store they share.
 */
function routeLimiterName(pluginName: string | undefined, methods: readonly string[], url: string, constraints: string): string {
  const parts = [pluginName ?? 'route', methods.join(','), url];
  if (constraints !== '') parts.push(constraints);
  const raw = parts.map(nameSafe).join('|');
  return raw.length <= 64 ? raw : `${raw.slice(0, 47)}~${createHash('sha256').update(raw).digest('hex').slice(0, 16)}`;
}

/** A route's constraints (`{ host, version }`) as text, keys sorted; '' when it has none. */
function constraintsOf(route: RouteOptions): string {
  const c = route.constraints as Record<string, unknown> | undefined;
  if (c === undefined || c === null) return '';
  return Object.keys(c)
    .sort()
    .map((k) => `${k}=${String(c[k])}`)
    .join(',');
}

const methodsOf = (method: RouteOptions['method']): string[] => (Array.isArray(method) ? method : [method]).map(String);

/** What the hooks of one registration share: the request flag its hooks set, and the trustProxy probe (once, on the first limited request). */
function registration(base: RateLimitHandler<FastifyRequest>): Registration {
  const reg: Registration = {
    ran: Symbol('tollgate.rateLimitRan'),
    trustChecked: false,
    checkTrust(request) {
      reg.trustChecked = true;
      base.checkTrustProxy('Fastify trustProxy', isPermissiveFastifyTrust(request));
    },
  };
  return reg;
}

/**
 * `request.rateLimit`, the registration's flag on requests, and `fastify.rateLimit`: the limiter, shedder,
 * route limiters and hook of the registration nearest to the context it is read on (a getter: a child
 * context that registers the plugin again reads its own, its parent the parent's; Fastify lets a name be
 * decorated once per tree).
 */
function decorate(fastify: FastifyInstance, base: RateLimitHandler<FastifyRequest>, reg: Registration, routes: Map<string, Limiter>): void {
  fastify.decorateRequest(reg.ran, false);
  if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', undefined);
  const marked = fastify as FastifyInstance & Marked;
  marked[NEAREST] = reg;
  marked[DECORATOR] = {
    limiter: base.limiter,
    shedder: base.shedder,
    routes,
    hook: (request: FastifyRequest, reply: FastifyReply) =>
      new Promise<void>((done) => limitRequest(base, reg, undefined, request, reply, done)),
  };
  if (!fastify.hasDecorator('rateLimit'))
    fastify.decorate('rateLimit', {
      getter(this: FastifyInstance) {
        // Set by every registration on its own instance, before any context below it can read it.
        return (this as FastifyInstance & Marked)[DECORATOR] as FastifyRateLimitDecorator;
      },
    });
}

/**
 * `make()`, with a configuration error it throws naming the route's option (`GET /a config.rateLimit.skip`),
 * not only the option (`skip`): in an app of many routes the option alone does not say which is wrong.
 */
function inRoute<T>(make: () => T, path: string): T {
  try {
    return make();
  } catch (error) {
    if (!(error instanceof RateLimitConfigError) || error.option.startsWith(path)) throw error;
    const option = `${path}.${error.option}`;
    const named = new RateLimitConfigError(error.code, option, '', error.received);
    named.message = error.message.replace(`'${error.option}'`, `'${option}'`);
    // The core's error, for its stack (where the option was read).
    named.cause = error;
    throw named;
  }
}

/** Throws when a route's `config.rateLimit` is neither options nor `false`, or holds the plugin-only `global`. */
function checkRouteOptions(own: unknown, path: string): void {
  if (own === undefined) return;
  if (own === null || typeof own !== 'object' || Array.isArray(own)) {
    throw new RateLimitConfigError('ERR_RL_INVALID_ROUTE_CONFIG', path, 'must be an options object or false', own);
  }
  if ('global' in own) {
    // `global` chooses which routes the plugin limits; a route's own options cannot hold it (it would be ignored).
    throw new RateLimitConfigError(
      'ERR_RL_UNKNOWN_OPTION',
      `${path}.global`,
      'is a plugin option; a route opts out with config.rateLimit: false',
      (own as Record<string, unknown>).global,
    );
  }
}

async function tollgatePlugin(fastify: FastifyInstance, options: FastifyRateLimitOptions): Promise<void> {
  const context = { adapterKeys: ADAPTER_KEYS, appLogger: fastify.log };
  const base = createRateLimitHandler<FastifyRequest>(options, context);
  const hook = hookOf(base.config.adapterOptions.hook, 'hook');
  const global = base.config.adapterOptions.global ?? true;
  if (typeof global !== 'boolean') throw new RateLimitConfigError('ERR_RL_INVALID_OPTION', 'global', 'must be a boolean', global);
  const reg = registration(base);
  const { ran } = reg;
  // Routes already in the router cannot be seen by onRoute: only then is the check for them needed.
  const routesBefore = fastify.printRoutes() !== EMPTY_ROUTER;
  const routes = new Map<string, Limiter>();
  const handlers: RateLimitHandler<FastifyRequest>[] = [base];
  // Route limiters by their config object, then methods and URL: the HEAD route Fastify adds for a GET
  // shares its options object and counts as GET, so it shares its limiter (one budget for GET and HEAD);
  // GET and POST of one URL keep two, also when they were given one options object.
  const byConfig = new WeakMap<object, Map<string, RateLimitHandler<FastifyRequest>>>();
  // Every "METHOD url" onRoute saw, limited or not: a request to any other route was declared before the plugin.
  const seen = new Set<string>();
  decorate(fastify, base, reg, routes);

  function handlerFor(own: FastifyRateLimitRouteOptions, route: RouteOptions): RateLimitHandler<FastifyRequest> {
    let byRoute = byConfig.get(own);
    if (byRoute === undefined) {
      byRoute = new Map();
      byConfig.set(own, byRoute);
    }
    // HEAD is GET without a body: one budget. Fastify adds the HEAD of a GET route with that route's
    // options, also when the route has several methods: it joins the limiter whose methods hold GET.
    const methods = methodsOf(route.method);
    const verbs = [...new Set(methods.map((m) => (m === 'HEAD' ? 'GET' : m)))].sort();
    const constraints = constraintsOf(route);
    const where = `${route.url} ${constraints}`;
    const key = `${verbs.join(',')} ${where}`;
    let handler = byRoute.get(key);
    if (handler === undefined && methods.every((m) => m === 'HEAD')) {
      for (const [k, h] of byRoute) if (k.endsWith(` ${where}`) && k.slice(0, k.indexOf(' ')).split(',').includes('GET')) handler = h;
    }
    if (handler === undefined) {
      const merged = mergeRouteOptions(options, own);
      // A route's limiter keeps its own state beside the plugin's, also on a store they share: its own name.
      const name = own.name ?? routeLimiterName(options.name, verbs, route.url, constraints);
      // One server-wide shedder: a route shares the plugin's unless it brings its own.
      const loadShedding = own.loadShedding ?? own.shed ?? base.shedder;
      // A name made here (neither the route nor the plugin has one) is still checked for another limiter of it on the store: two apps' `GET /search`.
      const nameByAdapter = own.name === undefined && options.name === undefined;
      handler = createRateLimitHandler<FastifyRequest>({ ...merged, name, shed: undefined, loadShedding }, { ...context, nameByAdapter });
      byRoute.set(key, handler);
      handlers.push(handler);
    }
    return handler;
  }

  // `this`: the instance the route is declared on. A route under a nearer registration of the plugin (one
  // made in a child context) takes its `config.rateLimit` there; here it is limited as any route of this
  // context (by the shared limiter, when `global`), and `false` opts it out of both.
  fastify.addHook('onRoute', function tollgateOnRoute(this: FastifyInstance & Marked, route: RouteOptions) {
    for (const m of methodsOf(route.method)) seen.add(`${m} ${route.url}`);
    const given = route.config?.rateLimit;
    // Under a nearer registration, only `false` (out of both) is this one's to read.
    const own = (this[NEAREST] ?? reg) === reg || given === false ? given : undefined;
    if (own === false || (own === undefined && !global)) return;
    const path = `${route.method} ${route.url} config.rateLimit`;
    checkRouteOptions(own, path);
    const handler = own === undefined ? base : inRoute(() => handlerFor(own, route), path);
    if (own !== undefined) for (const m of methodsOf(route.method)) routes.set(routeName(m, route), handler.limiter);
    const at = own?.hook === undefined ? hook : hookOf(own.hook, `${path}.hook`);
    const existing = route[at];
    const hooks = existing === undefined ? [] : Array.isArray(existing) ? existing : [existing];
    (route as unknown as Record<string, unknown>)[at] = [...hooks, createHook(handler, reg, at, route.url)];
  });
  // An instance hook reaches every route of this context, also those declared before the plugin, which
  // onRoute never saw: they are unlimited, so say so (once) rather than let it pass in silence. It runs
  // once the response is done, after every route hook: a request a route hook of this registration ran
  // on is on a route onRoute saw, so only the others pay for `request.routeOptions` (a fresh object of a
  // dozen fields per read). An onResponse hook makes Fastify set up its response listeners on every
  // request, so it is only added when there can be such routes: the router held some at registration.
  if (routesBefore) {
    fastify.addHook('onResponse', function tollgateRouteCheck(request: FastifyRequest, _reply: FastifyReply, done: () => void) {
      if ((request as unknown as Record<symbol, boolean>)[ran] !== true && !request.is404) warnIfUnseen(request);
      done();
    });
  }
  function warnIfUnseen(request: FastifyRequest): void {
    const url = request.routeOptions.url;
    // A prefixed '/' route is also registered as '/prefix/' without onRoute; it shares the options onRoute saw.
    const bare = url !== undefined && url.length > 1 && url.endsWith('/') ? url.slice(0, -1) : url;
    if (url !== undefined && !seen.has(`${request.method} ${url}`) && !seen.has(`${request.method} ${bare}`)) {
      base.diagnostics.warn(
        'WRN_RL_ROUTES_BEFORE_REGISTER',
        'a route declared before the rate-limit plugin was registered is not limited; register the plugin ' +
          '(await app.register(fastifyRateLimit, …)) before declaring routes.',
        { route: `${request.method} ${url}` },
      );
    }
  }
  fastify.addHook('onClose', async () => {
    for (const h of handlers) h.close();
    await Promise.all(handlers.map((h) => h.limiter.close()));
  });
}
/**
 * A route's entry in `app.rateLimit.routes`: `"GET /search"`, and for a route with constraints (a
 * version, a host) those too, `"GET /search {"version":"2.0.0"}"`: routes that differ only by them would
 * otherwise share one entry, the last declared.
 */
function routeName(method: string, route: RouteOptions): string {
  const constraints = route.constraints as Record<string, unknown> | undefined;
  const base = `${method} ${route.url}`;
  if (constraints === undefined || Object.keys(constraints).length === 0) return base;
  // A RegExp (a host pattern) would be `{}` in JSON: its source names it.
  return `${base} ${JSON.stringify(constraints, (_k, v: unknown) => (v instanceof RegExp ? String(v) : v))}`;
}

/** The plugin: `await app.register(fastifyRateLimit, { policies: [...] })`, before the routes it covers. */
export const fastifyRateLimit = fp(tollgatePlugin, { fastify: '5.x', name: '@tollgate/fastify' });
export default fastifyRateLimit;
