/**
 * @module `keys.header(name)`: keys a request by a credential header (an API key). The value is never
 * stored: the key is `apikey:` plus its SHA-256, or its HMAC-SHA-256 under `secret`, so a dump of the
 * store or a log line does not leak usable keys, and every key has the same short length. (The process
 * keeps the keys of its most recent values in memory, so a client's repeated requests are hashed once.)
 */
import { createHmac, createSecretKey } from 'node:crypto';
import { RateLimitConfigError } from '../../errors.js';
import { readOptions } from '../../internal/read-options.js';
import { isWellFormed, sha256 } from '../../internal/text.js';
import { readHeader } from '../client-ip/read-header.js';
import type { KeyFunction } from '../request-view.js';
import { BoundedCache } from './bounded-cache.js';

/** Options of `keys.header(name, options)`: a `secret` to key by an HMAC of the value instead of a plain digest. */
export interface HeaderKeyOptions {
  /**
   * HMAC-SHA-256 secret. With it, the stored key cannot be checked against guessed API keys by whoever
   * reads the store. Keep it stable: changing it changes every key (all counters start over). It is read
   * once, when the key function is made. Defaults to none: plain SHA-256.
   */
  secret?: string | Uint8Array | undefined;
}

/** How many recent header values one `keys.header()` function remembers the key of. */
export const RECENT_KEYS_SIZE = 1024;
/** Longer values are hashed on every request, never kept (a header value can be kilobytes). */
export const MAX_RECENT_VALUE_LENGTH = 256;

const HEADER_KEY_OPTIONS: { [P in keyof Required<HeaderKeyOptions>]: true } = { secret: true };
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

function isOws(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

/** Headers whose value is `auth-scheme [ 1*SP credentials ]` (RFC 9110 §11.6.2, §11.7.2). */
const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization']);

/**
 * One spelling per credential: the auth-scheme is case-insensitive (RFC 9110 §11.1) and servers take
 * `bearer`, `BEARER` or `Bearer   t` as `Bearer t`, so hashing the raw value gave one token 64 case
 * spellings of `bearer` times any number of spaces, each with its own budget (a limit of 2 per minute
 * admitted 131 of 131 requests). The scheme is lowercased and the whitespace after it becomes one space;
 * the credentials stay as sent (a token is case-sensitive). A value without a token scheme followed by
 * credentials (a bare API key, say) is left as it is, so two keys that differ only in case stay apart.
 */
function canonicalCredentials(value: string): string {
  let end = 0;
  while (end < value.length && !isOws(value.charCodeAt(end))) end++;
  if (end === value.length) return value;
  const scheme = value.slice(0, end);
  if (!TOKEN.test(scheme)) return value;
  let from = end;
  while (isOws(value.charCodeAt(from))) from++; // the value is trimmed: credentials follow
  return `${scheme.toLowerCase()} ${value.slice(from)}`;
}

/**
 * Keys a request by header `name` (case-insensitive): `apikey:<base64url digest>`. A missing, empty or
 * whitespace-only header yields undefined (no key: chain a fallback with `keys.first`). Repeated header
 * lines are joined with `", "` first, as Node does.
 *
 * @example
 * keys.first(keys.header('x-api-key', { secret: process.env.KEY_SECRET }), keys.ip())
 */
export function headerKey(name: string, options: HeaderKeyOptions = {}): KeyFunction {
  if (typeof name !== 'string' || !TOKEN.test(name)) {
    throw new RateLimitConfigError('ERR_RL_INVALID_HEADER_NAME', 'keys.header(name)', "must be a header name like 'x-api-key'", name);
  }
  const parsed = readOptions(options, HEADER_KEY_OPTIONS, 'keys.header', '{ secret }');
  const { secret } = parsed;
  const validSecret =
    secret === undefined || (typeof secret === 'string' && secret !== '') || (secret instanceof Uint8Array && secret.byteLength > 0);
  if (!validSecret) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_SECRET',
      'keys.header.secret',
      'must be a non-empty string or Uint8Array (32 random bytes or more is a good secret)',
      secret,
    );
  }
  const header = name.toLowerCase();
  const hmacKey = secret === undefined ? undefined : createSecretKey(typeof secret === 'string' ? Buffer.from(secret, 'utf8') : secret);
  const digest =
    hmacKey === undefined ? sha256 : (value: string) => createHmac('sha256', hmacKey).update(value, 'utf8').digest('base64url');
  // The keys of recent values: hashing costs 0.3 us (SHA-256) to 2 us (HMAC) per request, a lookup a
  // few ns. Bounded in entries and in value length; owned by this function, so never shared between
  // secrets. It holds recent raw values in process memory, as the requests that carried them did.
  const recent = new BoundedCache<string>(RECENT_KEYS_SIZE);
  // Chosen here, so other headers (x-api-key) pay nothing for it; the cache keeps each spelling's key.
  const canonical = CREDENTIAL_HEADERS.has(header) ? canonicalCredentials : undefined;
  return function headerKey(_request, view) {
    const raw = readHeader(view.headers, header);
    if (raw === undefined) return undefined;
    let from = 0;
    let to = raw.length;
    while (from < to && isOws(raw.charCodeAt(from))) from++;
    while (to > from && isOws(raw.charCodeAt(to - 1))) to--;
    if (from === to) return undefined;
    const value = raw.slice(from, to);
    const known = recent.get(value);
    if (known !== undefined) return known;
    if (!isWellFormed(value)) {
      view.diagnostics.warn(
        'WRN_RL_INVALID_KEY_ID',
        `keys.header('${header}') got a value with unpaired UTF-16 surrogates, which no HTTP parser produces; such requests get no key.`,
      );
      return undefined;
    }
    const key = `apikey:${digest(canonical === undefined ? value : canonical(value))}`;
    if (value.length <= MAX_RECENT_VALUE_LENGTH) recent.set(value, key);
    return key;
  };
}
