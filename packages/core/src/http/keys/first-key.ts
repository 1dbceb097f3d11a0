/**
 * @module `keys.first(...)`: a fallback chain of key functions. The first one that yields a key wins:
 * `keys.first(keys.user(...), keys.header('x-api-key'), keys.ip())` limits signed-in users per user,
 * API clients per key, and everyone else per IP. Stays synchronous while the extractors are.
 */
import { describeValue, RateLimitConfigError } from '../../errors.js';
import { isPromiseLike } from '../../internal/promise.js';
import type { KeyFunction, RequestView } from '../request-view.js';

/** What an extractor may return; JavaScript callers may return anything (a number id, an object). */
type KeyResult = string | undefined | null;

/**
 * Only a non-empty string is a key: anything else means "none, try the next". A value that is neither a
 * string nor "no key" (`undefined`, `null`, `false`) is a bug in the extractor (a number id, the user object):
 * warned once, naming the argument, so a chain does not quietly fall through to its IP fallback.
 */
function isKey<Req>(value: KeyResult, index: number, view: RequestView<Req>): value is string {
  if (typeof value === 'string') return value !== '';
  // `false` is "no key" too: `(req) => req.authed && req.user.id` for an anonymous request.
  if (value !== undefined && value !== null && (value as unknown) !== false) {
    view.diagnostics.warn(
      'WRN_RL_INVALID_KEY_ID',
      `keys.first() argument ${index + 1} returned ${typeof value}, not a string; a key function returns a string or undefined ` +
        '(wrap an id in keys.user(fn), which takes numbers). keys.first() tried the next.',
      { received: describeValue(value) },
    );
  }
  return false;
}

async function continueAsync<Req>(
  pending: Promise<KeyResult>,
  next: number,
  extractors: readonly KeyFunction<Req>[],
  request: Req,
  view: RequestView<Req>,
): Promise<string | undefined> {
  const first = await pending;
  if (isKey(first, next - 1, view)) return first;
  for (let i = next; i < extractors.length; i++) {
    const key: KeyResult = await (extractors[i] as KeyFunction<Req>)(request, view);
    if (isKey(key, i, view)) return key;
  }
  return undefined;
}

/**
 * Returns a key function trying `extractors` in order; the first non-empty string wins (`undefined`,
 * `null`, `''` and anything not a string, such as a number, mean "none, try the next": a value that is no
 * key falls back, rather than putting every request in the shared 'unkeyed' bucket; anything but a string,
 * `undefined`, `null` or `false` is warned about once, WRN_RL_INVALID_KEY_ID). Undefined when none yields a key. Errors thrown by an extractor
 * propagate: they are bugs to see, not a reason to fall back.
 */
export function firstKey<Req>(...extractors: KeyFunction<Req>[]): KeyFunction<Req> {
  if (extractors.length === 0) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_KEY_FUNCTION',
      'keys.first()',
      'needs at least one key function, e.g. keys.first(keys.user(fn), keys.ip())',
      undefined,
    );
  }
  extractors.forEach((extractor, i) => {
    if (typeof extractor !== 'function') {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_KEY_FUNCTION',
        `keys.first() argument ${i + 1}`,
        'must be a key function such as keys.ip() or (req, view) => string | undefined',
        extractor,
      );
    }
  });
  const list = Object.freeze([...extractors]);
  return function firstKey(request, view) {
    for (let i = 0; i < list.length; i++) {
      const key: KeyResult | Promise<KeyResult> = (list[i] as KeyFunction<Req>)(request, view);
      if (isPromiseLike(key)) return continueAsync(key, i + 1, list, request, view);
      if (isKey(key, i, view)) return key;
    }
    return undefined;
  };
}
