/**
 * @module The plain view of a request an adapter hands the core. Adapters translate their framework's
 * request into this; everything that derives keys, costs or responses reads only this view (and hands
 * `request` to user callbacks), so the behaviour is the same in Express, Fastify and Koa.
 */
import type { Diagnostics } from '../diagnostics.js';

/** Header values as Node's `IncomingMessage.headers` holds them: lower-case names. */
export type HeaderBag = Readonly<Record<string, string | string[] | undefined>>;

/** What a key function sees of a request, in every framework alike: the socket address, the headers, method and URL, the request itself and warn-once diagnostics. */
export interface RequestView<Req = unknown> {
  /** The socket peer address (`req.socket.remoteAddress`); undefined once the socket is gone. */
  readonly remoteAddress: string | undefined;
  /** Raw request headers, lower-case names. */
  readonly headers: HeaderBag;
  readonly method: string;
  /** Path and query as received. */
  readonly url: string;
  /** The framework's request object (Express `req`, Fastify `request`, Koa `ctx`), for user callbacks. */
  readonly request: Req;
  /** Warn-once diagnostics of the middleware instance handling this request. */
  readonly diagnostics: Diagnostics;
}

/**
 * Derives the rate-limit key of a request. Built-in extractors (`keys.ip()`, ...) read `view`; custom
 * functions usually read `request`. `undefined` means "no key from this extractor" (see `keys.first`).
 */
// biome-ignore lint/suspicious/noExplicitAny: the default lets one extractor serve every framework's request type.
export type KeyFunction<Req = any> = (request: Req, view: RequestView<Req>) => string | undefined | Promise<string | undefined>;
