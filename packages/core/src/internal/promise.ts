/**
 * @module Telling a synchronous answer from a pending one: the hot paths return a value when they can
 * and a promise only when they must, and every caller asks this one question.
 */

/** Whether `value` is a promise (anything with a `then` method): how a caller tells a synchronous answer from a pending one. */
export function isPromiseLike<T>(value: T | Promise<T>): value is Promise<T> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
