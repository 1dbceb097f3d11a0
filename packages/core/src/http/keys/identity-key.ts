/**
 * @module `keys.user(fn)` and `keys.tenant(fn)`: key a request by an identity your code already knows
 * (the authenticated user, the customer account). `fn` returns the id; the key is `user:<id>` or
 * `tenant:<id>`, readable for short printable ids, hashed for long ones (see namespaced-key.ts).
 */

import { RateLimitConfigError } from '../../errors.js';
import { isPromiseLike } from '../../internal/promise.js';
import { isWellFormed } from '../../internal/text.js';
import type { KeyFunction, RequestView } from '../request-view.js';
import { namespacedKey } from './namespaced-key.js';

/** What an id function may return. `undefined`, `null` and `''` mean "no id" (e.g. anonymous). */
export type KeyId = string | number | bigint | null | undefined;

/** Returns the id of a request (sync or async). */
// biome-ignore lint/suspicious/noExplicitAny: the default lets one function serve every framework's request type.
export type IdFunction<Req = any> = (request: Req, view: RequestView<Req>) => KeyId | Promise<KeyId>;

function describe(value: unknown): string {
  if (typeof value === 'number') return String(value);
  return value === null ? 'null' : typeof value;
}

/** The key of `id` in `namespace`, or undefined (warned once when `id` is of an unusable kind). */
function toKey(namespace: string, id: unknown, view: RequestView): string | undefined {
  if (id === undefined || id === null || id === '') return undefined;
  let text: string | undefined;
  if (typeof id === 'string') text = isWellFormed(id) ? id : undefined;
  else if (typeof id === 'number') text = Number.isFinite(id) ? String(id) : undefined;
  else if (typeof id === 'bigint') text = String(id);
  if (text === undefined) {
    view.diagnostics.warn(
      'WRN_RL_INVALID_KEY_ID',
      `The keys.${namespace}() id function returned ${typeof id === 'string' ? 'a string with unpaired UTF-16 surrogates' : describe(id)}; ` +
        'return a string, a finite number, a bigint, or undefined for "no id". Such requests get no key.',
    );
    return undefined;
  }
  return namespacedKey(namespace, text);
}

function idKey<Req>(namespace: 'user' | 'tenant', fn: IdFunction<Req>): KeyFunction<Req> {
  if (typeof fn !== 'function') {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_KEY_FUNCTION',
      `keys.${namespace}(fn)`,
      `must be a function returning the ${namespace} id, e.g. (req) => req.${namespace}?.id`,
      fn,
    );
  }
  return function idKey(request, view) {
    const id = fn(request, view);
    return isPromiseLike(id) ? id.then((resolved) => toKey(namespace, resolved, view)) : toKey(namespace, id, view);
  };
}

/**
 * Keys a request by user id: `user:<id>`. `fn(request, view)` returns the id (string, number or bigint;
 * `undefined`, `null` or `''` for anonymous requests, which then get no key). Ids that are equal as text
 * share a key (`42` and `'42'`).
 *
 * @example
 * keys.first(keys.user((req) => req.user?.id), keys.ip())
 */
export function userKey<Req>(fn: IdFunction<Req>): KeyFunction<Req> {
  return idKey('user', fn);
}

/**
 * Keys a request by tenant (customer account) id: `tenant:<id>`. Same rules as `userKey`. Limit per
 * tenant as well as per API key when one customer holds many keys.
 */
export function tenantKey<Req>(fn: IdFunction<Req>): KeyFunction<Req> {
  return idKey('tenant', fn);
}
