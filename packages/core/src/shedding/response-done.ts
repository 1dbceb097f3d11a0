/**
 * @module `onResponseDone`: calls back exactly once when a response is over, whichever comes first:
 * it finished ('finish'), or the connection closed before that ('close': the client went away, or the
 * handler errored and the framework destroyed the socket). The adapters release shed tickets and
 * concurrency leases through it, so a slot is given back once, never twice, never never.
 */

/** The part of Node's `ServerResponse` this needs. */
export interface DoneResponse {
  readonly writableFinished?: boolean;
  readonly destroyed?: boolean;
  once(event: 'finish' | 'close', listener: () => void): unknown;
  off(event: 'finish' | 'close', listener: () => void): unknown;
}

/** `done(finished)`: `finished` is true when the whole response was written, false when it was cut short. */
export function onResponseDone(response: DoneResponse, done: (finished: boolean) => void): void {
  if (response.writableFinished === true || response.destroyed === true) {
    done(response.writableFinished === true);
    return;
  }
  let called = false;
  const finish = (): void => end(true);
  const close = (): void => end(response.writableFinished === true);
  function end(finished: boolean): void {
    if (called) return;
    called = true;
    response.off('finish', finish);
    response.off('close', close);
    done(finished);
  }
  response.once('finish', finish);
  response.once('close', close);
}
