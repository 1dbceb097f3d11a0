/**
 * @module Option names of the libraries teams migrate from (express-rate-limit, @fastify/rate-limit,
 * koa-ratelimit, rate-limiter-flexible), each with what to write here instead: an unknown option that a
 * peer knows is refused with that hint rather than a bare list of valid names (read-options.ts). Hints
 * only: none of these is accepted. The adapter READMEs' "Coming from" tables say the same at length.
 */

const LIMIT = "a policy's limit here: policies: { limit: 100, windowMs: 60_000 }";
const WINDOW = "a policy's windowMs here (milliseconds): policies: { limit: 100, windowMs: 60_000 }";
const STORE_ERROR = "onStoreError here: 'local' (the default), 'open' or 'closed'";
const STORE = 'store here: new RedisStore({ client, prefix }) for Redis (a MemoryStore by default)';
const NAME = "name here (the limiter's identity in the store), or the RedisStore's prefix";

/** What `createLimiter` and the adapters both take, by peer spelling. */
const SHARED: Readonly<Record<string, string>> = {
  max: LIMIT,
  limit: LIMIT,
  points: LIMIT,
  windowMs: WINDOW,
  timeWindow: WINDOW,
  duration: WINDOW,
  passOnStoreError: STORE_ERROR,
  skipOnError: STORE_ERROR,
  redis: STORE,
  db: STORE,
  driver: STORE,
  cache: 'store here: new MemoryStore({ maxKeys })',
  nameSpace: NAME,
  namespace: NAME,
};

const KEY =
  "key here: a function of the request (or keys.ip(), keys.header('x-api-key')); returning nothing shares one 'unkeyed' bucket, so use skip to let a request through";
const BODY = 'onLimited here: ({ decision, problem }) => ({ body, contentType }) replaces the body; the status stays 429';
const SKIP = 'skip here: a function of the request, true to let it through unlimited';
const HOOK = 'onDecision here: called with every decision (decision.allowed is false when limited)';
const HEADERS = "headers here: 'draft-11' (the default), 'draft-7', 'draft-6', 'legacy', a list of them, or false";

/** What only the adapters' middleware takes, by peer spelling. */
const ADAPTER: Readonly<Record<string, string>> = {
  keyGenerator: KEY,
  id: KEY,
  ipv6Subnet: 'key here: keys.ip({ ipv6Prefix: 56 }) (64 by default)',
  handler: BODY,
  message: BODY,
  errorMessage: BODY,
  errorResponseBuilder: BODY,
  statusCode: BODY,
  status: BODY,
  throw: 'none: the 429 is answered, never thrown (the Koa README says how to see it from an outer middleware)',
  allowList: SKIP,
  whitelist: SKIP,
  onLimitReached: HOOK,
  onExceeded: HOOK,
  onExceeding: HOOK,
  standardHeaders: HEADERS,
  legacyHeaders: HEADERS,
  addHeaders: HEADERS,
  addHeadersOnExceeding: HEADERS,
  enableDraftSpec: HEADERS,
  disableHeader: HEADERS,
  requestPropertyName: 'none: the decision is on req.rateLimit (Express), request.rateLimit (Fastify), ctx.state.rateLimit (Koa)',
};

/** Top-level options of the adapters' middleware, by peer spelling. */
export const PEER_OPTIONS: Readonly<Record<string, string>> = Object.freeze({ ...SHARED, ...ADAPTER });

/** Top-level options of `createLimiter`, by peer spelling: an adapter-only one says where it belongs. */
export const PEER_LIMITER_OPTIONS: Readonly<Record<string, string>> = Object.freeze({
  ...SHARED,
  ...Object.fromEntries(
    Object.keys(ADAPTER).map((k) => [k, "an option of the adapters' rateLimit(); createLimiter takes the key at check(key)"]),
  ),
});

/** Options of one policy, by peer spelling. */
export const PEER_POLICY_OPTIONS: Readonly<Record<string, string>> = Object.freeze({
  max: 'limit here',
  points: 'limit here',
  timeWindow: 'windowMs here (milliseconds)',
  duration: 'windowMs here (milliseconds)',
});

/** express-rate-limit's `validate` checks, by name, with the warning code that checks the same here. */
export const PEER_VALIDATIONS: Readonly<Record<string, string>> = Object.freeze({
  trustProxy: 'WRN_RL_PERMISSIVE_TRUST_PROXY here',
  xForwardedForHeader: 'WRN_RL_UNTRUSTED_FORWARDED_HEADER here',
  ip: 'WRN_RL_INVALID_REMOTE_ADDRESS here',
});

/** For `key`, if `hints` knows it as another library's option, what to write here instead (appended to an error); else ''. */
export function peerHint(key: string, hints: Readonly<Record<string, string>> | undefined): string {
  const hint = hints !== undefined && Object.hasOwn(hints, key) ? hints[key] : undefined;
  return hint === undefined ? '' : `; another library's option: ${hint}`;
}
