/**
 * @module The README snippets users copy, type-checked under `exactOptionalPropertyTypes` (many strict
 * projects turn it on): an option fed from `process.env` is `string | undefined`, which an optional
 * property must accept. Checked by exact-optional.test.ts with its own tsconfig, against the built
 * declarations (dist), as users get them.
 */
import { keys } from '@tollgate/core';
import { rateLimit } from '@tollgate/express';

export const key = keys.first(
  keys.user((req: { user?: { id: string } }) => req.user?.id),
  keys.header('x-api-key', { secret: process.env.KEY_HMAC }),
  keys.ip({ trustedProxies: ['private'] }),
);

export const erlCompatible = rateLimit({
  policies: { algorithm: 'fixed-window', anchor: 'first-request', limit: 100, windowMs: 60_000 },
  headers: ['legacy', 'draft-7'],
  callbackTimeoutMs: 1000,
  logLimit: { lines: 10, intervalMs: 60_000 },
  key: keys.first(keys.header('x-api-key', { secret: process.env.KEY_HMAC }), keys.ip()),
});
