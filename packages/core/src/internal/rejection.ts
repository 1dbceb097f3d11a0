/**
 * @module What a callback the library calls and does not wait for (`onDecision`, a limiter event
 * listener) returned: an `async` callback returns a promise, and a rejection nobody handles ends a Node
 * process (`--unhandled-rejections=throw`, the default since Node 15). `catchRejection` hands it to the
 * same report a synchronous throw gets.
 */
import { isPromiseLike } from './promise.js';

/**
 * When `out` is a promise (anything with a `then` method), calls `onRejected` with its rejection. Call
 * it inside the `try` around the callback: a `then` getter that throws is then that callback's throw.
 */
export function catchRejection(out: unknown, onRejected: (error: unknown) => void): void {
  if (isPromiseLike(out)) out.then(undefined, onRejected);
}
