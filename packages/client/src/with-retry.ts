/**
 * @module `withRetry(fetch, options)`: a fetch-compatible function that retries what a rate limit or an
 * overloaded server refused, the way the server asked, without ever storming it. One attempt:
 *
 * 1. pacing (optional) may hold the request until the quotas its line answers to allow it, or answer it
 *    at once, unsent, with a refusal when their reset is beyond what it may wait;
 * 2. the request goes out; a response whose status is in `retryOn` (429, 503) is a candidate for a retry,
 *    a network error too (`retryNetworkErrors`), but never fetch's own refusal of its input (a bad URL, a
 *    GET with a body: `isInputError`); anything else is returned as it is;
 * 3. a retry happens only if the request may be replayed (idempotent method, or told so), attempts are
 *    left, the budget allows it, and the wait (the server's `Retry-After` or `RateLimit` `t`, plus jitter)
 *    fits under `maxDelayMs` and before the deadline. Otherwise the last response is returned (or the
 *    network error thrown): the caller sees what the server said, `Retry-After` included.
 *
 * An `AbortSignal` (on the init or the Request) ends the call at once, in flight or while waiting, with
 * the signal's reason, as fetch does, and still aborts the returned response's body. `timeoutMs` is a
 * deadline for the whole call (up to the headers), retries and waits included: in flight it aborts with
 * `ERR_RL_DEADLINE_EXCEEDED`; a wait that would end past it is not started and the last response is
 * returned instead. Pacing holds first attempts only, never longer than `maxDelayMs` and never past the
 * deadline (a reset beyond either is answered at once with a local refusal): a retry waits what its
 * refusal asked for.
 */
import { monotonicClock, RateLimitConfigError } from '@tollgate/core';
import { backoffDelay, type Jitter } from './backoff.js';
import { functionOption, integerIn, type KeysEnum, numberIn, oneOf, RateLimitClientError, readOptions } from './errors.js';
import { follow, isAbortSignal } from './linked-signal.js';
import { hashKey, Pacer, type PacingScope, type PacingTicket, pacingScope, requestLine } from './pacer.js';
import { type RateLimitSignal, readRateLimitSignal, serverWaitMs } from './rate-limit-signal.js';
import { RetryBudget, type RetryBudgetOptions } from './retry-budget.js';
import { sleep } from './sleep.js';

/** The fetch shape `withRetry` wraps and returns: global `fetch`, undici's, or any function like them. */
export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** What `pacing.key` is given: the request as it is about to be sent. */
export interface PacingRequest {
  /** Upper case, e.g. `'GET'`. */
  readonly method: string;
  /** The URL as given (absolute, or relative for a fetch with a base elsewhere). */
  readonly url: string;
  readonly headers: Headers;
}

/** The `pacing` option's object form. */
export interface PacingOptions {
  /** The share of a quota below which requests are spread out, from 0 to 1. Defaults to `0.1`. */
  paceBelow?: number;
  /**
   * The caller's partition of a request (e.g. its credential or tenant): requests of different keys
   * never hold each other where the server names no `pk`. Hashed, never kept as given. Defaults to the
   * request's `Authorization` header (none: one partition).
   */
  key?: (request: PacingRequest) => string | undefined;
}

/** What `onRetry` is told before each wait. */
export interface RetryEvent {
  /** The retry about to happen: 1 for the first. */
  readonly attempt: number;
  /** How long it waits first, in ms. */
  readonly delayMs: number;
  /** The refused response (its body is discarded once `onRetry` returns, or its promise settles), or undefined after a network error. */
  readonly response: Response | undefined;
  readonly error: unknown;
  /** What the response said about the quota. */
  readonly signal: RateLimitSignal | undefined;
}

export interface RetryOptions {
  /** Retries after the first attempt, an integer from 0 to 100. Defaults to `5`. */
  retries?: number;
  /** Statuses that are retried. 413 is never allowed (a request too large for the quota stays too large). Defaults to `[429, 503]`. */
  retryOn?: readonly number[];
  /** Whether a network error (fetch rejecting, not an abort nor a refusal of its input) is retried, with backoff. Defaults to `true`. */
  retryNetworkErrors?: boolean;
  /**
   * Retry POST, PATCH and other non-idempotent methods too. Defaults to `false`: they are retried only
   * when the request carries the `idempotencyKeyHeader`.
   */
  retryNonIdempotent?: boolean;
  /** A request with this header is retried whatever its method (the server deduplicates it). Defaults to `'idempotency-key'`. */
  idempotencyKeyHeader?: string;
  /** `'full'` or `'decorrelated'` (see README, "Jitter"). Defaults to `'full'`. */
  jitter?: Jitter;
  /** The backoff's unit when the server names no wait, in ms. Defaults to `100`. */
  baseDelayMs?: number;
  /** The longest single wait, in ms: a server that asks for longer gets its response returned, not a retry. Defaults to `30_000`. */
  maxDelayMs?: number;
  /**
   * A deadline for the whole call, retries and waits included, in ms; the call ends when a response's
   * headers arrive, so reading its body is bounded by your own signal, not by this. Defaults to none.
   */
  timeoutMs?: number;
  /** The retry budget, shared by every call of this function; `false` turns it off. Defaults to `{ ratio: 0.1, minRetriesPerSecond: 1, windowMs: 10_000 }`. */
  budget?: RetryBudgetOptions | false;
  /**
   * Pace requests from the quotas responses advertise (any dialect), per origin, policy and partition:
   * `true`, or `{ paceBelow, key }` (see `PacingOptions`). Defaults to `false`.
   */
  pacing?: boolean | PacingOptions;
  /**
   * Called before each retry's wait; a promise it returns is waited for. A throw or a rejection ends the
   * call with that error. Defaults to none.
   */
  onRetry?: (event: RetryEvent) => unknown;
  /**
   * Time in ms since the epoch, for tests (virtual time): one function for HTTP-dates, the deadline, the
   * budget and pacing. By default `Date.now` reads HTTP-dates and epoch resets, and a monotonic clock
   * (which a system clock step never moves) times the deadline, the budget's window and pacing.
   */
  clock?: () => number;
  /** Random numbers in [0, 1) for the jitter. Defaults to `Math.random`. */
  random?: () => number;
}

/** What a `withRetry` function counted since it was made. */
export interface RetryStats {
  /** Calls: first attempts, and the calls pacing answered itself (`pacedRefused`). */
  readonly requests: number;
  /** Retries sent. */
  readonly retries: number;
  /** Retries the budget refused (the refused response was returned instead). */
  readonly budgetRefused: number;
  /** Retries not made because the server asked for longer than `maxDelayMs` or the deadline allowed. */
  readonly tooLongRefused: number;
  /** Total ms first attempts waited for pacing. */
  readonly pacedMs: number;
  /**
   * Calls pacing answered itself, unsent, with a refusal (the reset beyond `maxDelayMs` or the deadline).
   * Counted in `requests` too.
   */
  readonly pacedRefused: number;
}

/** A fetch-compatible function, plus its counters. */
export interface RetryFetch extends FetchLike {
  stats(): RetryStats;
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE']);

const KNOWN: KeysEnum<RetryOptions> = {
  retries: true,
  retryOn: true,
  retryNetworkErrors: true,
  retryNonIdempotent: true,
  idempotencyKeyHeader: true,
  jitter: true,
  baseDelayMs: true,
  maxDelayMs: true,
  timeoutMs: true,
  budget: true,
  pacing: true,
  onRetry: true,
  clock: true,
  random: true,
};
const BUDGET_KNOWN: KeysEnum<RetryBudgetOptions> = { ratio: true, minRetriesPerSecond: true, windowMs: true };
const DAY = 86_400_000;

interface RetryConfig {
  readonly retries: number;
  readonly retryOn: ReadonlySet<number>;
  readonly retryNetworkErrors: boolean;
  readonly retryNonIdempotent: boolean;
  readonly idempotencyKeyHeader: string;
  readonly jitter: Jitter;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  readonly timeoutMs: number | undefined;
  readonly budget: RetryBudget | undefined;
  readonly pacer: Pacer | undefined;
  /** The caller's partition of a request, for pacing. */
  readonly pacingKey: (request: PacingRequest) => string | undefined;
  readonly onRetry: ((event: RetryEvent) => unknown) | undefined;
  /** Times intervals: the deadline, the budget's window, pacing. */
  readonly clock: () => number;
  /** Reads what a response says in wall time: HTTP-dates, epoch resets. */
  readonly wallClock: () => number;
  readonly random: () => number;
}

function parseRetryOn(value: unknown): ReadonlySet<number> {
  if (!Array.isArray(value) || value.some((s) => !Number.isInteger(s) || s < 400 || s > 599 || s === 413)) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_OPTION',
      'retryOn',
      'must be an array of 4xx/5xx statuses other than 413 (a request too large for the quota never fits), e.g. [429, 503]',
      value,
    );
  }
  return new Set(value as number[]);
}

function parseRetryOptions(input: RetryOptions | undefined): RetryConfig {
  const o = readOptions(input, KNOWN, 'options', '{ retries: 5, timeoutMs: 10_000 }');
  const given = o.clock === undefined ? undefined : functionOption<() => number>(o.clock, 'clock', '() => Date.now()');
  const clock = given ?? monotonicClock;
  let budget: RetryBudget | undefined;
  if (o.budget !== false) {
    const b = readOptions(o.budget, BUDGET_KNOWN, 'budget', '{ ratio: 0.1, minRetriesPerSecond: 1, windowMs: 10_000 }');
    const windowMs = b.windowMs === undefined ? 10_000 : integerIn(b.windowMs, 'budget.windowMs', 10, DAY, 'e.g. 10_000');
    const perSecond =
      b.minRetriesPerSecond === undefined ? 1 : numberIn(b.minRetriesPerSecond, 'budget.minRetriesPerSecond', 0, 1e6, 'e.g. 1');
    const ratio = b.ratio === undefined ? 0.1 : numberIn(b.ratio, 'budget.ratio', 0, 1000, 'e.g. 0.1');
    budget = new RetryBudget(ratio, (perSecond * windowMs) / 1000, windowMs, clock);
  }
  if (
    o.idempotencyKeyHeader !== undefined &&
    (typeof o.idempotencyKeyHeader !== 'string' || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(o.idempotencyKeyHeader))
  ) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_OPTION',
      'idempotencyKeyHeader',
      'must be a header name, e.g. "idempotency-key"',
      o.idempotencyKeyHeader,
    );
  }
  const maxDelayMs = o.maxDelayMs === undefined ? 30_000 : integerIn(o.maxDelayMs, 'maxDelayMs', 1, DAY, 'e.g. 30_000');
  const random = o.random === undefined ? Math.random : functionOption<() => number>(o.random, 'random', 'Math.random');
  const pacing = parsePacing(o.pacing, maxDelayMs, clock, random);
  const baseDelayMs =
    o.baseDelayMs === undefined
      ? Math.min(100, maxDelayMs)
      : integerIn(o.baseDelayMs, 'baseDelayMs', 1, maxDelayMs, 'at most maxDelayMs, e.g. 100');
  return Object.freeze({
    retries: o.retries === undefined ? 5 : integerIn(o.retries, 'retries', 0, 100, 'e.g. 5'),
    retryOn: o.retryOn === undefined ? new Set([429, 503]) : parseRetryOn(o.retryOn),
    retryNetworkErrors: o.retryNetworkErrors === undefined ? true : oneOf(o.retryNetworkErrors, 'retryNetworkErrors', [true, false]),
    retryNonIdempotent: o.retryNonIdempotent === undefined ? false : oneOf(o.retryNonIdempotent, 'retryNonIdempotent', [true, false]),
    idempotencyKeyHeader: o.idempotencyKeyHeader ?? 'idempotency-key',
    jitter: o.jitter === undefined ? 'full' : oneOf(o.jitter, 'jitter', ['full', 'decorrelated'] as const),
    baseDelayMs,
    maxDelayMs,
    timeoutMs: o.timeoutMs === undefined ? undefined : integerIn(o.timeoutMs, 'timeoutMs', 1, DAY, 'e.g. 10_000'),
    budget,
    pacer: pacing?.pacer,
    pacingKey: pacing?.key ?? authorizationKey,
    onRetry:
      o.onRetry === undefined
        ? undefined
        : functionOption<(e: RetryEvent) => unknown>(o.onRetry, 'onRetry', '(e) => log(e.attempt, e.delayMs)'),
    clock,
    wallClock: given ?? Date.now,
    random,
  });
}

/** The default `pacing.key`: the request's credential. */
const authorizationKey = (request: PacingRequest): string | undefined => request.headers.get('authorization') ?? undefined;

const PACING_KNOWN: KeysEnum<PacingOptions> = { paceBelow: true, key: true };

function parsePacing(
  value: unknown,
  maxDelayMs: number,
  clock: () => number,
  random: () => number,
): { pacer: Pacer; key: ((request: PacingRequest) => string | undefined) | undefined } | undefined {
  if (value === undefined || value === false) return undefined;
  if (value !== true && (value === null || typeof value !== 'object')) {
    throw new RateLimitConfigError('ERR_RL_INVALID_OPTION', 'pacing', 'must be true, false or { paceBelow, key }', value);
  }
  const p = value === true ? {} : readOptions(value as PacingOptions, PACING_KNOWN, 'pacing', '{ paceBelow: 0.1 }');
  const paceBelow = p.paceBelow === undefined ? 0.1 : numberIn(p.paceBelow, 'pacing.paceBelow', 0, 1, 'e.g. 0.1');
  const key =
    p.key === undefined
      ? undefined
      : functionOption<(request: PacingRequest) => string | undefined>(
          p.key,
          'pacing.key',
          "(request) => request.headers.get('x-api-key')",
        );
  return { pacer: new Pacer({ paceBelow, maxDelayMs, clock, random }), key };
}

/** The parts of a call every attempt needs. */
interface CallShape {
  readonly method: string;
  /** Where pacing counts the call (undefined without pacing). */
  readonly scope: PacingScope | undefined;
  readonly replayable: boolean;
  readonly userSignal: AbortSignal | undefined;
}

/**
 * How fetch says the network failed: undici's `fetch failed` (the reason in its `cause`), Chrome's
 * `Failed to fetch`, Firefox's `NetworkError when attempting to fetch resource.`, Safari's `Load failed`.
 */
const NETWORK_FAILURE = /^(fetch failed|failed to fetch|networkerror\b|load failed|network ?error\b)/i;

/**
 * What undici's `fetch failed` carries in its `cause` when the request fails the same way whatever the
 * network does (undici's own network errors without a `code`, lib/web/fetch/index.js): a scheme it cannot
 * fetch (`ftp:`, `file:`, `about:`), a port fetch blocks (1, 9, 25, ...), a `blob:` URL it cannot resolve,
 * a redirect loop (`redirect count exceeded`) or a redirect with `redirect: 'error'`, a request mode or
 * cache mode it refuses. A network failure's cause has a `code` (ECONNREFUSED, UND_ERR_SOCKET, ...).
 */
const REFUSED_CAUSE =
  /^(unknown scheme|bad port|invalid method|not implemented|about scheme is not supported|url scheme must be|blocked$|cors failure|cross origin not allowed|failed to fetch the data url|local urls only|only if cached|redirect count exceeded|unexpected redirect|request mode cannot be)/i;

/**
 * Whether `error` is fetch refusing its input (`Failed to parse URL`, a GET with a body, a bad header or
 * method, credentials in the URL, a scheme or port fetch never sends to): a TypeError that is not one of
 * the network failures above, or undici's `fetch failed` with such a refusal as its cause. Sending it
 * again fails the same way, so it is thrown at once and spends no retry. Other errors (node-fetch's
 * `FetchError`, a wrapper's own) count as network errors.
 */
function isInputError(error: unknown): boolean {
  if (!(error instanceof TypeError)) return false;
  if (!NETWORK_FAILURE.test(error.message)) return true;
  const cause: unknown = error.cause;
  return cause instanceof Error && (cause as { code?: unknown }).code === undefined && REFUSED_CAUSE.test(cause.message);
}

/** An abort (or a timeout) a custom fetch rejected with on its own: the caller asked for it, never retried. */
function isAbort(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === 'AbortError' || name === 'TimeoutError';
}

function shapeOf(input: string | URL | Request, init: RequestInit | undefined, config: RetryConfig): CallShape {
  const request = input instanceof Request ? input : undefined;
  const method = (init?.method ?? request?.method ?? 'GET').toUpperCase();
  const url = request?.url ?? String(input);
  const headers = new Headers(init?.headers ?? request?.headers);
  // A Request's own body is replayed from `request.clone()` (the runtime keeps a copy); an init body only
  // when it is one value that can be sent again.
  const streamed = init?.body !== undefined && init.body !== null && !resendable(init.body);
  const allowedMethod = IDEMPOTENT.has(method) || config.retryNonIdempotent || headers.has(config.idempotencyKeyHeader);
  const scope = config.pacer === undefined ? undefined : scopeOf(method, url, headers, config.pacingKey);
  return { method, scope, replayable: allowedMethod && !streamed, userSignal: signalOf(init, request) };
}

/** Where pacing counts a request: its origin, the caller's partition (hashed) and its line. */
function scopeOf(method: string, url: string, headers: Headers, key: (request: PacingRequest) => string | undefined): PacingScope {
  const partition: unknown = key({ method, url, headers });
  if (partition !== undefined && typeof partition !== 'string') {
    throw new RateLimitConfigError('ERR_RL_INVALID_OPTION', 'pacing.key', 'must return a string or undefined', partition);
  }
  let origin = '';
  let path = url;
  try {
    const parsed = new URL(url);
    origin = parsed.origin;
    path = parsed.pathname;
  } catch {
    // A relative URL (a fetch with a base elsewhere): one origin for all of them, the path as given.
    path = url.split(/[?#]/, 1)[0] ?? url;
  }
  return pacingScope(origin, hashKey(partition ?? ''), requestLine(method, path));
}

/**
 * The caller's signal, refused as fetch refuses it when it is not an AbortSignal (before any timer is
 * set, so nothing is left running).
 */
function signalOf(init: RequestInit | undefined, request: Request | undefined): AbortSignal | undefined {
  const signal: unknown = init?.signal ?? request?.signal ?? undefined;
  if (signal === undefined) return undefined;
  if (!isAbortSignal(signal)) throw new TypeError("withRetry: the request's signal is not an AbortSignal");
  return signal;
}

/**
 * Whether a body can be sent again as it is: a string, bytes, a Blob, FormData or URLSearchParams. A
 * stream (a ReadableStream, a Node Readable, any async iterable) is read by its first send: a second
 * would send nothing, or fail.
 */
function resendable(body: unknown): boolean {
  return (
    typeof body === 'string' ||
    body instanceof ArrayBuffer ||
    ArrayBuffer.isView(body) ||
    (typeof Blob !== 'undefined' && body instanceof Blob) ||
    (typeof FormData !== 'undefined' && body instanceof FormData) ||
    body instanceof URLSearchParams
  );
}

/**
 * Links the caller's signal and the deadline into one signal for every attempt and wait. The caller's
 * side of the link outlives the call (held weakly: linked-signal.ts, not Node 20's leaking
 * `AbortSignal.any`): an abort after the response came still ends the reading of its body, as it does
 * with fetch alone.
 */
function callSignal(
  shape: CallShape,
  timeoutMs: number | undefined,
  clock: () => number,
): { signal: AbortSignal | undefined; deadline: number; done: () => void } {
  if (timeoutMs === undefined) return { signal: shape.userSignal, deadline: Number.POSITIVE_INFINITY, done: () => undefined };
  const controller = new AbortController();
  const deadline = clock() + timeoutMs;
  const timer = setTimeout(
    () =>
      controller.abort(
        new RateLimitClientError(
          'ERR_RL_DEADLINE_EXCEEDED',
          `the request did not complete within timeoutMs (${timeoutMs} ms), retries included`,
        ),
      ),
    timeoutMs,
  );
  if (shape.userSignal !== undefined) follow(shape.userSignal, controller);
  return { signal: controller.signal, deadline, done: () => clearTimeout(timer) };
}

/**
 * `promise`, or the signal's reason as soon as it aborts: a fetch that ignores its signal cannot outlive the
 * deadline. A rejection of `promise` that comes after the abort is observed, never left unhandled.
 */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** What pacing let a first attempt do: go (probing what `ticket` names), or be answered at once. */
type Paced = { readonly kind: 'go'; readonly ticket: PacingTicket | undefined } | { readonly kind: 'refuse'; readonly response: Response };

/**
 * Pacing before a first attempt (pacer.ts): waits for the unit the pacer grants, asking again while none
 * is left (until the reset and this client's jitter past it, or a probe's answer); at most `maxDelayMs`
 * in all, and no wait that would end past the deadline (the request then leaves at once). When the reset
 * itself is beyond that, the pacer refuses the request at once: it is answered with a refusal, unsent.
 */
async function paced(
  config: RetryConfig,
  counts: { pacedMs: number },
  pacer: Pacer,
  scope: PacingScope,
  signal: AbortSignal | undefined,
  deadline: number,
): Promise<Paced> {
  const start = config.clock();
  for (;;) {
    const now = config.clock();
    const allowMs = Math.min(config.maxDelayMs - (now - start), deadline - now);
    const r = pacer.reserve(scope, allowMs);
    if (r.kind === 'refuse') return { kind: 'refuse', response: localRefusal(r.status, r.retryAfterMs) };
    const wait = Math.min(r.waitMs, config.maxDelayMs - (now - start));
    // Pacing has waited as long as it may, or would wait past the deadline: the request leaves at once.
    const late = wait <= 0 || now + wait >= deadline;
    // A granted unit is waited for to its end; a request waiting for numbers (the reset, a probe's answer)
    // also wakes when they come, then asks again: new numbers pace it, they never release it unpaced.
    if (!late) {
      try {
        await sleep(wait, signal, r.kind === 'go' ? undefined : r.renewed);
      } catch (reason) {
        if (r.kind === 'go') pacer.forsake(r);
        throw reason;
      }
      counts.pacedMs += config.clock() - now;
    }
    if (r.kind !== 'go') {
      if (late) return { kind: 'go', ticket: undefined };
      continue;
    }
    // Numbers that came while it waited may have left fewer than were granted: then it asks again.
    if (pacer.redeem(r)) return { kind: 'go', ticket: r.ticket };
  }
}

/** The longest `Retry-After` a local refusal names, s (a server's absurd one is not echoed to the digit). */
const MAX_RETRY_AFTER_S = 1e9;

/**
 * What pacing answers a call whose reset is beyond what it may wait: the status the server last refused
 * with (429 when it never did), no body, and the time left to the reset as `Retry-After` (seconds,
 * rounded up): the caller sees what the server would say, as with a retry whose wait is too long.
 */
function localRefusal(status: number, retryAfterMs: number): Response {
  const seconds = Math.min(MAX_RETRY_AFTER_S, Math.max(1, Math.ceil(retryAfterMs / 1000)));
  return new Response(null, { status, headers: { 'retry-after': String(seconds) } });
}

/**
 * The wait before retry `n + 1`: the server's floor plus jitter, the jitter drawn again within the first
 * half of the room left above the floor when the first draw would leave the attempt less than the other
 * half (a retry the server's wait lets fit is made); undefined when even the floor ends past it.
 */
function retryDelay(config: RetryConfig, n: number, floorMs: number | undefined, previousMs: number, deadline: number): number | undefined {
  const delayMs = backoffDelay({
    attempt: n + 1,
    floorMs,
    previousMs,
    jitter: config.jitter,
    baseDelayMs: config.baseDelayMs,
    maxDelayMs: config.maxDelayMs,
    random: config.random,
  });
  const room = deadline - config.clock();
  // None when half the room above the floor is under RETRY_ROOM_MS (a retry that could only time out). Kept
  // when it leaves the attempt at least that half (no deadline: always); else redrawn in the first half:
  // before, a draw ending 1 to 100 ms before the deadline was kept, and its attempt could only time out.
  const floor = floorMs ?? 0;
  const spare = (room - floor) / 2;
  if (spare < RETRY_ROOM_MS) return undefined;
  if (delayMs <= floor + spare) return delayMs;
  return Math.ceil(floor + config.random() * spare);
}

/** `send()`, counted in flight by `pacer` until it ends (pacer.ts: a response's numbers do not count the others). */
async function inFlight<T>(pacer: Pacer | undefined, scope: PacingScope | undefined, send: () => Promise<T>): Promise<T> {
  if (pacer === undefined || scope === undefined) return send();
  const ids = pacer.sent(scope);
  try {
    return await send();
  } finally {
    pacer.landed(ids);
  }
}

/**
 * Tells `onRetry` of a retry (an async one is waited for, a rejection ending the call as a throw does,
 * never past the call's deadline or the caller's abort, never left unhandled), frees the refused body,
 * and waits `delayMs`.
 */
async function tellAndWait(config: RetryConfig, callSignal: AbortSignal | undefined, event: RetryEvent): Promise<void> {
  try {
    const told = config.onRetry?.(event);
    if (callSignal !== undefined) await untilAborted(Promise.resolve(told), callSignal);
    else await told;
  } finally {
    // The refused body is not read past onRetry: free its connection before waiting (or throwing).
    await event.response?.body?.cancel().catch(() => undefined);
  }
  await sleep(event.delayMs, callSignal);
}

/** The least time a retry redrawn before the deadline keeps for its attempt, ms. */
const RETRY_ROOM_MS = 50;

/**
 * Wraps `fetchFn` (default: the global `fetch`) into a fetch-compatible function that retries refused
 * requests as the server asks, with jitter and a budget, and optionally paces them (see the module
 * comment and the README). The retry budget and pacing state are shared by every call of the returned
 * function: make one per upstream service and reuse it.
 */
export function withRetry(fetchFn: FetchLike = globalThis.fetch, options?: RetryOptions): RetryFetch {
  if (typeof fetchFn !== 'function') {
    throw new RateLimitConfigError('ERR_RL_INVALID_OPTION', 'fetch', 'must be a fetch function, e.g. globalThis.fetch', fetchFn);
  }
  const config = parseRetryOptions(options);
  const counts = { requests: 0, retries: 0, budgetRefused: 0, tooLongRefused: 0, pacedMs: 0, pacedRefused: 0 };

  function attempt(input: string | URL | Request, init: RequestInit | undefined, signal: AbortSignal | undefined) {
    const attemptInput = input instanceof Request ? input.clone() : input;
    const response = fetchFn(attemptInput, signal === undefined ? init : { ...init, signal });
    return signal === undefined ? response : untilAborted(response, signal);
  }

  async function retryFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
    const shape = shapeOf(input, init, config);
    const call = callSignal(shape, config.timeoutMs, config.clock);
    counts.requests++;
    let previousMs = 0;
    /** What the first attempt probes for pacing, until it is settled. */
    let probe: PacingTicket | undefined;
    /** The current attempt's number in the pacer (Pacer.answered). */
    let attemptNo = 0;
    const pacer = config.pacer;
    const scope = shape.scope;
    try {
      for (let n = 0; ; n++) {
        let response: Response | undefined;
        let error: unknown;
        try {
          if (n === 0 && pacer !== undefined && scope !== undefined) {
            const p = await paced(config, counts, pacer, scope, call.signal, call.deadline);
            if (p.kind === 'refuse') {
              counts.pacedRefused++;
              return p.response;
            }
            probe = p.ticket;
          }
          if (n === 0) config.budget?.request();
          attemptNo = pacer?.attempts ?? 0;
          response = await inFlight(pacer, scope, () => attempt(input, init, call.signal));
        } catch (e) {
          if (call.signal?.aborted) throw call.signal.reason;
          error = e;
        }
        const signal = response === undefined ? undefined : readRateLimitSignal(response.headers, config.wallClock());
        if (pacer !== undefined && scope !== undefined) {
          // A cached response says nothing of the server now: no numbers, and no sign it took a request.
          const cached = signal?.cached === true;
          if (signal !== undefined && response !== undefined && !cached) pacer.observe(scope, signal, response.status);
          if (response?.ok === true && !cached && signal?.remaining === undefined && signal?.retryAfterMs === undefined)
            pacer.answered(scope, attemptNo);
          if (probe !== undefined) pacer.settled(probe, response === undefined ? 'none' : cached ? 'cached' : 'answered');
          probe = undefined;
        }
        const retryable =
          response === undefined
            ? config.retryNetworkErrors && !isInputError(error) && !isAbort(error)
            : config.retryOn.has(response.status);
        const give = () => {
          if (response !== undefined) return response;
          throw error;
        };
        if (!retryable || !shape.replayable || n >= config.retries) return give();
        const floorMs = signal === undefined ? undefined : serverWaitMs(signal);
        if (floorMs !== undefined && floorMs > config.maxDelayMs) {
          counts.tooLongRefused++;
          return give();
        }
        const delayMs = retryDelay(config, n, floorMs, previousMs, call.deadline);
        if (delayMs === undefined) {
          counts.tooLongRefused++;
          return give();
        }
        const ticket = config.budget?.tryRetry();
        if (config.budget !== undefined && ticket === undefined) {
          counts.budgetRefused++;
          return give();
        }
        try {
          await tellAndWait(config, call.signal, { attempt: n + 1, delayMs, response, error, signal });
        } catch (reason) {
          // The retry is not sent (onRetry threw, the call was aborted or ran out of time): its budget goes back.
          if (ticket !== undefined) config.budget?.giveBack(ticket);
          throw reason;
        }
        previousMs = delayMs;
        counts.retries++;
      }
    } finally {
      if (probe !== undefined) pacer?.settled(probe, 'none');
      call.done();
    }
  }

  return Object.assign(retryFetch, { stats: (): RetryStats => ({ ...counts }) });
}
