/**
 * @module `onResponseDone`: calls back exactly once when the handler is done with a response. That is
 * 'finish' (the whole response was written) in the common case. When the connection closes first (the
 * client went away, or something destroyed the response), the handler may still run: a handler that
 * sent its headers may keep working (an export, server-sent events), so headers alone say nothing.
 * The slot it holds is given back only when it is done too, which is the first of:
 * - the handler ends the response (`res.end()`, which express and Fastify call even on a closed
 *   connection), or already has;
 * - a body piped into the response lets go of it (`'unpipe'`: `stream.pipe`, `pipeline`, Fastify's
 *   `reply.send(stream)` and Koa's stream bodies unpipe when the connection closes; nothing will end such
 *   a response any more), or is piped into it only after the close (`'pipe'`: the handler handed it a
 *   body it will never carry, and no `'unpipe'` follows);
 * - the response is destroyed by a call (`res.destroy()`, by the handler or its framework: done with
 *   it, whatever it wrote; a client that goes away closes the response without that call), or its
 *   connection is, from this side (`destroyedHere`: Express's final handler after an error once headers
 *   are sent destroys the socket and never ends the response);
 * - `maxHoldMs` after the close, when the caller gives one (a shed slot with no lease: a handler that
 *   never ends the response, or destroyed it itself, gives the slot back then; a lease is bounded by its
 *   renewals instead, `maxLeaseMs`).
 * The adapters release shed tickets and concurrency leases through it: once, never twice.
 *
 * The connection's close is the socket's as well as the response's: a response queued behind others on
 * a pipelined HTTP/1.1 connection has no socket yet, and when the client leaves Node destroys its request
 * but the response emits neither 'finish' nor 'close', ever (a probe: 3 pipelined requests, the client
 * gone, 2 slots held for good, a denial of service in a few connections). Its request's socket says so.
 */

/** The part of a `net.Socket` this needs. */
export interface DoneSocket {
  readonly destroyed?: boolean;
  /** True once the client's end of the stream was read (it closed its side). */
  readonly readableEnded?: boolean;
  /** The error that destroyed the socket (a client's reset: ECONNRESET), or null. */
  readonly errored?: unknown;
  once(event: 'close', listener: () => void): unknown;
}

/**
 * Whether `response`'s connection was destroyed from this side with the client still there: the app or
 * its framework is done with the response (Express's final handler destroys the socket after an error
 * once headers are sent; a hijacking handler may). A client that leaves closes its end (`readableEnded`)
 * or resets it (`errored`); an HTTP/2 stream reset leaves the session's socket up.
 */
function destroyedHere(response: Pick<DoneResponse, 'req'>): boolean {
  const socket = response.req?.socket;
  return socket?.destroyed === true && socket.readableEnded === false && socket.errored === null;
}

/** The part of Node's `ServerResponse` this needs. */
export interface DoneResponse {
  readonly writableFinished?: boolean;
  readonly writableEnded?: boolean;
  readonly destroyed?: boolean;
  /** The request it answers (Node's `res.req`), whose socket closes when the connection does. */
  readonly req?: { readonly socket?: DoneSocket | null } | undefined;
  end: (...args: never[]) => unknown;
  destroy?: (...args: never[]) => unknown;
  once(event: 'finish' | 'close' | 'unpipe' | 'pipe', listener: () => void): unknown;
  off(event: 'finish' | 'close' | 'unpipe' | 'pipe', listener: () => void): unknown;
}

/**
 * Per socket, what to call when it closes: one listener per socket, however many requests a keep-alive
 * or pipelined connection carries at once (a listener each would pass Node's max-listeners warning).
 */
const onSocketClose = new WeakMap<DoneSocket, Set<() => void>>();

/** Calls `listener` once when `response`'s connection closes (at once when it has); returns what cancels it. */
function whenConnectionCloses(response: Pick<DoneResponse, 'req'>, listener: () => void): () => void {
  const socket = response.req?.socket;
  if (socket === undefined || socket === null) return () => undefined;
  if (socket.destroyed === true) {
    queueMicrotask(listener);
    return () => undefined;
  }
  let listeners = onSocketClose.get(socket);
  if (listeners === undefined) {
    const set = new Set<() => void>();
    listeners = set;
    onSocketClose.set(socket, set);
    socket.once('close', () => {
      onSocketClose.delete(socket);
      for (const l of set) l();
    });
  }
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** A signal aborted when `response` closes or its connection does (the client went away, or the response is over). */
export function abortOnClose(response: Pick<DoneResponse, 'destroyed' | 'once' | 'req'>): AbortSignal {
  const controller = new AbortController();
  if (response.destroyed === true) {
    controller.abort();
    return controller.signal;
  }
  // The watch of the socket ends with the response: a keep-alive connection carries many.
  const unwatch = whenConnectionCloses(response, () => controller.abort());
  response.once('close', () => {
    unwatch();
    controller.abort();
  });
  response.once('finish', unwatch);
  return controller.signal;
}

/**
 * For frameworks whose middleware sees the handler settle (Koa's `await next()`): the handler is done,
 * so release now when the client already went away (Koa does not end a response it can no longer
 * write), else when the response is written (a streamed body outlives the handler).
 */
export function onHandlerSettled(response: DoneResponse, done: (finished: boolean) => void, maxHoldMs?: number): void {
  if (response.writableFinished !== true && (response.destroyed === true || response.writableEnded === true)) {
    done(false);
    return;
  }
  onResponseDone(response, done, maxHoldMs);
}

/**
 * `done(finished)`: `finished` is true when the whole response was written, false when the connection
 * closed first (then called once the handler is done with it: see the module doc).
 */
export function onResponseDone(response: DoneResponse, done: (finished: boolean) => void, maxHoldMs?: number): void {
  let called = false;
  let closed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** Puts the response's own `destroy` back (see the end of this function). */
  let undoDestroy: (() => void) | undefined;
  let unwatchSocket: (() => void) | undefined;
  function end(finished: boolean): void {
    if (called) return;
    called = true;
    if (timer !== undefined) clearTimeout(timer);
    response.off('finish', finish);
    response.off('close', close);
    response.off('unpipe', unpiped);
    response.off('pipe', unpiped);
    undoDestroy?.();
    unwatchSocket?.();
    done(finished);
  }
  const finish = (): void => end(true);
  const unpiped = (): void => end(false);
  // The response's 'close', or its connection's (a pipelined response that never had the socket): once.
  const close = (): void => {
    if (called || closed) return;
    closed = true;
    if (response.writableFinished === true || response.writableEnded === true) {
      end(response.writableFinished === true);
      return;
    }
    // The connection destroyed from this side, as by `res.destroy()`: the handler is done with it.
    if (destroyedHere(response)) {
      end(false);
      return;
    }
    // The handler may still run: wait for it to end the response, or for a piped body to let go.
    callThen(response, 'end', unpiped);
    response.once('unpipe', unpiped);
    response.once('pipe', unpiped);
    if (maxHoldMs !== undefined) {
      timer = setTimeout(() => end(false), maxHoldMs);
      timer.unref?.();
    }
  };
  if (response.writableFinished === true) {
    end(true);
    return;
  }
  if (response.destroyed === true) {
    close();
    return;
  }
  response.once('finish', finish);
  response.once('close', close);
  unwatchSocket = whenConnectionCloses(response, close);
  // A call to destroy() ends the handler's use of the response; the close it causes then finds it done.
  if (response.destroy !== undefined) undoDestroy = callThen(response, 'destroy', unpiped);
}

/**
 * Has `response[method]` call the response's own method, then `then`, on its first call (and puts the own
 * one back then); returns what puts it back sooner, while the wrapper is still the one in place.
 */
function callThen(response: DoneResponse, method: 'end' | 'destroy', then: () => void): () => void {
  const original = response[method] as (...args: never[]) => unknown;
  const restore = (): void => {
    if (response[method] === wrapper) response[method] = original;
  };
  const wrapper = (...args: never[]): unknown => {
    restore();
    try {
      return original.apply(response, args);
    } finally {
      then();
    }
  };
  response[method] = wrapper;
  return restore;
}
