/**
 * @module `onResponseDone`: calls back exactly once when the handler is done with a response. That is
 * 'finish' (the whole response was written) in the common case. When the connection closes first:
 * - with the response already under way (its headers sent: a streamed body the client stopped reading,
 *   a stream that failed, a response the handler destroyed), the handler has answered, and nothing will
 *   end the response any more (Fastify and `stream.pipe` destroy it, they do not end it): done now;
 * - before that (the client went away while the handler works), the handler usually still runs; the slot
 *   it holds is given back only when it is done too, which is when it ends the response (`res.end()`,
 *   which express and Fastify call even on a closed connection) or right away if it already has. A
 *   handler that never ends its response keeps its concurrency lease until renewals stop (`maxLeaseMs`)
 *   and the lease expires.
 * The adapters release shed tickets and concurrency leases through it: once, never twice.
 */

/** The part of Node's `ServerResponse` this needs. */
export interface DoneResponse {
  readonly writableFinished?: boolean;
  readonly writableEnded?: boolean;
  readonly destroyed?: boolean;
  readonly headersSent?: boolean;
  end: (...args: never[]) => unknown;
  once(event: 'finish' | 'close', listener: () => void): unknown;
  off(event: 'finish' | 'close', listener: () => void): unknown;
}

/** A signal aborted when `response` closes (the client went away, or the response is over). */
export function abortOnClose(response: Pick<DoneResponse, 'destroyed' | 'once'>): AbortSignal {
  const controller = new AbortController();
  if (response.destroyed === true) controller.abort();
  else response.once('close', () => controller.abort());
  return controller.signal;
}

/**
 * For frameworks whose middleware sees the handler settle (Koa's `await next()`): the handler is done,
 * so release now when the client already went away (Koa does not end a response it can no longer
 * write), else when the response is written (a streamed body outlives the handler).
 */
export function onHandlerSettled(response: DoneResponse, done: (finished: boolean) => void): void {
  if (response.writableFinished !== true && (response.destroyed === true || response.writableEnded === true)) {
    done(false);
    return;
  }
  onResponseDone(response, done);
}

/**
 * `done(finished)`: `finished` is true when the whole response was written, false when the client
 * went away first (then called once the handler ended the response).
 */
export function onResponseDone(response: DoneResponse, done: (finished: boolean) => void): void {
  let called = false;
  function end(finished: boolean): void {
    if (called) return;
    called = true;
    response.off('finish', finish);
    response.off('close', close);
    done(finished);
  }
  const finish = (): void => end(true);
  const close = (): void => {
    if (response.writableFinished === true || response.writableEnded === true || response.headersSent === true) {
      end(response.writableFinished === true);
      return;
    }
    // The client went away while the handler runs: wait for the handler to end the response.
    const original = response.end;
    response.end = ((...args: never[]) => {
      response.end = original;
      try {
        return original.apply(response, args);
      } finally {
        end(false);
      }
    }) as DoneResponse['end'];
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
}
