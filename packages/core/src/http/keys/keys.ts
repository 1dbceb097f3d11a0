/**
 * @module The `keys` namespace: every built-in key function in one object, so that a key option reads
 * `key: keys.first(keys.user((req) => req.user?.id), keys.ip({ trustedProxies: ['private'] }))`.
 */
import { firstKey } from './first-key.js';
import { headerKey } from './header-key.js';
import { tenantKey, userKey } from './identity-key.js';
import { ipKey } from './ip-key.js';

/** Key functions for the `key` option: `ip()`, `header(name)`, `user(fn)`, `tenant(fn)` and `first(...fns)`. */
export const keys = Object.freeze({
  /** Client IP through trusted proxies, IPv6 grouped by prefix: `ip:203.0.113.7`, `ip:2001:db8:1:2::/64`. */
  ip: ipKey,
  /** A credential header, hashed: `apikey:<sha256>`. */
  header: headerKey,
  /** `user:<id>` from `fn(request, view)`. */
  user: userKey,
  /** `tenant:<id>` from `fn(request, view)`. */
  tenant: tenantKey,
  /** The first extractor that yields a key. */
  first: firstKey,
});
