/**
 * @module Reads one request header from a `HeaderBag` as a single string, whatever shape the adapter
 * handed over (Node joins repeated lines itself; other sources pass an array).
 */
import type { HeaderBag } from '../request-view.js';

/**
 * The value of header `name` (lower case). Repeated lines are joined in order with `", "`, exactly as
 * Node's `IncomingMessage.headers` joins them, so every adapter yields the same string. Undefined when
 * the header is absent; non-string entries (from a hand-built view) are ignored.
 */
export function readHeader(headers: HeaderBag, name: string): string | undefined {
  return headerValue(headers[name]);
}

/**
 * One header's value as a single string: a string as it is, an array's string lines joined in order with
 * `", "`; undefined for anything else. What `readHeader` reads, for a header from elsewhere (a logged one).
 */
export function headerValue(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) {
    const lines = value.filter((line): line is string => typeof line === 'string');
    return lines.length === 0 ? undefined : lines.join(', ');
  }
  return undefined;
}
