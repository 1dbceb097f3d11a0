/**
 * @module The types an adapter meets: what it hands the handler (RequestInput, ResponseTarget), what it
 * gets back (RunOutcome, HandledRequest) and the handler itself (RateLimitHandler).
 */
import type { Diagnostics } from '../../diagnostics.js';
import type { Limiter } from '../../limiter/limiter.js';
import type { Logger } from '../../logging.js';
import type { LoadShedder } from '../../shedding/load-shedder.js';
import type { Decision } from '../../types.js';
import type { HeaderBag } from '../request-view.js';
import type { ResponsePlan } from '../response/respond.js';
import type { ClosableResponse } from '../response/shaping-delay.js';
import type { RateLimitConfig } from './rate-limit-options.js';

/** The plain parts of a request an adapter hands the handler. */
export interface RequestInput<Req> {
  readonly request: Req;
  /** `socket.remoteAddress`. */
  readonly remoteAddress: string | undefined;
  readonly headers: HeaderBag;
  readonly method: string;
  readonly url: string;
  /** The route template the framework matched (`/users/:id`), for the `http.route` metric attribute; never the raw URL. */
  readonly route?: string | undefined;
  /** A request-scoped logger (Fastify's `request.log`), used when the user set no `logger`. */
  readonly logger?: Logger;
  /**
   * The Node `IncomingMessage` under the framework's request. A handler charges one request once:
   * the same middleware instance mounted twice on one request's path (`/api` and `/api/v1`) lets it
   * through the second time without counting or writing anything.
   */
  readonly raw?: object;
}

/** The Node response state `run` reads: `ServerResponse` fits as it is. */
export interface RawResponse extends ClosableResponse {
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  destroy(): unknown;
  /** Node's: the lower-case names of the headers set so far. */
  getHeaderNames?(): string[];
  /** Node's: a header an earlier middleware set that would misdescribe a rejection's body goes. */
  removeHeader?(name: string): void;
}

/** How an adapter writes in its framework. `run` calls these only while the response has not started. */
export interface ResponseTarget {
  /** The Node `ServerResponse` (Express `res`, Koa `ctx.res`, Fastify `reply.raw`). */
  readonly raw: RawResponse;
  /** Attaches the decision to the request (`req.rateLimit`, `ctx.state.rateLimit`), before anything is written. */
  attach(decision: Decision): void;
  /** Framework state that also means "already answered" (Fastify's `reply.sent`, which covers hijack). */
  sent?(): boolean;
  header(name: string, value: string): void;
  /**
   * Removes the headers of `names` (lower-case) set before the decision, for a framework that keeps
   * headers of its own besides `raw`'s (Fastify's `reply.header`); without it, the handler removes them
   * from `raw`.
   */
  remove?(names: Pick<ReadonlySet<string>, 'has'>): void;
  /** Answers the request with `status` and `body` (headers are already set). */
  reject(status: number, body: string): void;
  /** The request will get no answer from the framework (the client left, or the response was aborted). */
  abandon(): void;
}

/** A decided request: its Decision and the response planned for it. */
export interface HandledRequest {
  readonly decision: Decision;
  readonly plan: ResponsePlan;
}

/** What the adapter does after `run`: `'next'` continues to the route; `'stop'` does nothing more. */
export type RunOutcome = 'next' | 'stop';

/** The per-middleware handler an adapter builds once: it runs the whole flow of a request through the adapter's target. */
// biome-ignore lint/suspicious/noExplicitAny: the default lets one handler type serve every framework's request.
export interface RateLimitHandler<Req = any> {
  readonly limiter: Limiter;
  readonly config: RateLimitConfig<Req>;
  /** The logger of lines not tied to a request (shadow summary, store failures), through the log budget. */
  readonly logger: Logger;
  /** This middleware's warn-once diagnostics (for the adapter's framework checks). */
  readonly diagnostics: Diagnostics;
  /** Undefined when the request is skipped: send nothing, count nothing. Never rejects for a user callback's fault. */
  handle(input: RequestInput<Req>): Promise<HandledRequest | undefined>;
  /**
   * The whole flow, writing through `target`; never throws, never rejects. The outcome itself when every
   * step was synchronous (the common case: no async hook, the in-memory store), else a promise of it:
   * `isPromiseLike(outcome) ? await outcome : outcome` spares a request two microtask turns. A request
   * admitted by the load shedder (`loadShedding`) or holding concurrency leases keeps them until the handler is
   * done with `target.raw` (finish, or its `end()` after the client went away); see `settled` for
   * frameworks that know more.
   */
  run(input: RequestInput<Req>, target: ResponseTarget): RunOutcome | Promise<RunOutcome>;
  /** The server-wide load shedder (`loadShedding` option), for `shedder.state()`; undefined when none. */
  readonly shedder: LoadShedder<Req> | undefined;
  /**
   * For adapters that see the handler settle (Koa's `await next()`): the handler of `response` is done,
   * so its slot and leases go back now if the client already left (else when the response is written).
   */
  settled(response: object): void;
  /** False when an admitted request can hold nothing (no `loadShedding`, no concurrency policy): `settled` would do nothing. */
  readonly holding: boolean;
  /**
   * Framework diagnostic: warns once (`WRN_RL_PERMISSIVE_TRUST_PROXY`) when `permissive` is true, i.e.
   * the framework's proxy setting lets a client choose its own IP. `setting` names it for the message.
   */
  checkTrustProxy(setting: string, permissive: boolean, logger?: Logger): void;
  /** Writes pending summaries and stops their timers (the adapters call it on close). */
  close(): void;
}

/** Adapter context for `createRateLimitHandler`. */
export interface HandlerContext {
  /** Extra option keys this adapter accepts (returned unvalidated in `config.adapterOptions`). */
  readonly adapterKeys?: readonly string[];
  /**
   * The app's logger (Fastify's `fastify.log`), used when the user set no `logger`. Fastify's no-op
   * logger (no `logger` given to `Fastify()`) counts as none: tollgate then logs to `console`.
   */
  readonly appLogger?: Logger | undefined;
  /**
   * The options' `name` was made by the adapter, not given by the user (a Fastify route's own limiter in a
   * plugin without a name): a second live limiter of that name on the store is refused
   * (`ERR_RL_SHARED_STATE`), as two without a name are, since nobody asked them to share a budget.
   */
  readonly nameByAdapter?: boolean;
}
