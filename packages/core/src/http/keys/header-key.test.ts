import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { configError } from '../../testing/config-error.js';
import { requestView } from '../../testing/request-view-fixture.js';
import type { HeaderBag } from '../request-view.js';
import { headerKey, MAX_RECENT_VALUE_LENGTH, RECENT_KEYS_SIZE } from './header-key.js';

const sha = (value: string) => createHash('sha256').update(value, 'utf8').digest('base64url');

function keyFor(key: ReturnType<typeof headerKey>, headers: HeaderBag) {
  const { view, logger } = requestView({ remoteAddress: '203.0.113.7', headers });
  return { key: key({}, view), warnings: logger.warnings };
}

describe('keys.header()', () => {
  it('keys by the SHA-256 of the value, never the value itself', () => {
    const { key } = keyFor(headerKey('x-api-key'), { 'x-api-key': 'sk_live_abc123' });
    expect(key).toBe(`apikey:${sha('sk_live_abc123')}`);
    expect(key).not.toContain('sk_live');
  });

  it('uses HMAC-SHA-256 when given a secret (string or bytes)', () => {
    const secret = 'a-long-random-secret-from-the-environment';
    expect(keyFor(headerKey('x-api-key', { secret }), { 'x-api-key': 'k' }).key).toBe(
      `apikey:${createHmac('sha256', secret).update('k').digest('base64url')}`,
    );
    const bytes = Buffer.from('0123456789abcdef0123456789abcdef');
    expect(keyFor(headerKey('x-api-key', { secret: bytes }), { 'x-api-key': 'k' }).key).toBe(
      `apikey:${createHmac('sha256', bytes).update('k').digest('base64url')}`,
    );
    expect(keyFor(headerKey('x-api-key', { secret }), { 'x-api-key': 'k' }).key).not.toBe(`apikey:${sha('k')}`);
  });

  it('matches the header name case-insensitively', () => {
    expect(keyFor(headerKey('X-API-Key'), { 'x-api-key': 'k' }).key).toBe(`apikey:${sha('k')}`);
  });

  it.each<[string, HeaderBag]>([
    ['missing', {}],
    ['empty', { 'x-api-key': '' }],
    ['whitespace only', { 'x-api-key': ' \t ' }],
    ['empty list', { 'x-api-key': [] }],
  ])('yields undefined when the header is %s', (_name, headers) => {
    expect(keyFor(headerKey('x-api-key'), headers)).toEqual({ key: undefined, warnings: [] });
  });

  it('trims surrounding whitespace and joins repeated lines as Node does', () => {
    expect(keyFor(headerKey('x-api-key'), { 'x-api-key': '  k  ' }).key).toBe(`apikey:${sha('k')}`);
    expect(keyFor(headerKey('x-api-key'), { 'x-api-key': ['k1', 'k2'] }).key).toBe(`apikey:${sha('k1, k2')}`);
  });

  it('keeps keys of every length short and distinct', () => {
    const huge = 'k'.repeat(100_000);
    const { key } = keyFor(headerKey('x-api-key'), { 'x-api-key': huge });
    expect(key).toMatch(/^apikey:[A-Za-z0-9_-]{43}$/);
    expect(keyFor(headerKey('x-api-key'), { 'x-api-key': `${huge}j` }).key).not.toBe(key);
  });

  it('handles control characters and latin-1 bytes as plain bytes of the value', () => {
    expect(keyFor(headerKey('x-api-key'), { 'x-api-key': 'a\u0000b\u00ff' }).key).toBe(`apikey:${sha('a\u0000b\u00ff')}`);
  });

  it('refuses, with a warning, a value no HTTP parser could produce', () => {
    const { key, warnings } = keyFor(headerKey('x-api-key'), { 'x-api-key': 'k\uD800' });
    expect(key).toBeUndefined();
    expect(warnings[0]).toMatch(/^WRN_RL_INVALID_KEY_ID: /);
  });

  it.each<[unknown, unknown, string, string]>([
    ['', undefined, 'ERR_RL_INVALID_HEADER_NAME', 'keys.header(name)'],
    ['x api key', undefined, 'ERR_RL_INVALID_HEADER_NAME', 'keys.header(name)'],
    ['x-api-key:', undefined, 'ERR_RL_INVALID_HEADER_NAME', 'keys.header(name)'],
    [42, undefined, 'ERR_RL_INVALID_HEADER_NAME', 'keys.header(name)'],
    ['x-api-key', { secret: '' }, 'ERR_RL_INVALID_SECRET', 'keys.header.secret'],
    ['x-api-key', { secret: new Uint8Array(0) }, 'ERR_RL_INVALID_SECRET', 'keys.header.secret'],
    ['x-api-key', { secret: 42 }, 'ERR_RL_INVALID_SECRET', 'keys.header.secret'],
    ['x-api-key', { pepper: 'x' }, 'ERR_RL_UNKNOWN_OPTION', 'keys.header.pepper'],
    ['x-api-key', null, 'ERR_RL_INVALID_OPTIONS', 'keys.header'],
  ])('rejects keys.header(%j, %j)', (name, options, code, option) => {
    const error = configError(() => headerKey(name as string, options as never));
    expect(error.code).toBe(code);
    expect(error.option).toBe(option);
  });

  it('gives one credential one key, whatever the spelling of its auth-scheme (RFC 9110 §11.1)', () => {
    for (const name of ['authorization', 'Proxy-Authorization']) {
      const key = headerKey(name, { secret: 's3cret' });
      const header = name.toLowerCase();
      const spellings = ['Bearer tok_AbC', 'bearer tok_AbC', 'BEARER tok_AbC', 'bEaReR   tok_AbC', 'Bearer\t tok_AbC', '  Bearer tok_AbC '];
      const keys = new Set(spellings.map((value) => keyFor(key, { [header]: value }).key));
      expect(keys).toEqual(new Set([`apikey:${createHmac('sha256', 's3cret').update('bearer tok_AbC').digest('base64url')}`]));
    }
  });

  it('keeps credentials case-sensitive, and other headers and bare values as sent', () => {
    const auth = headerKey('authorization');
    expect(keyFor(auth, { authorization: 'Bearer tok_abc' }).key).not.toBe(keyFor(auth, { authorization: 'Bearer TOK_ABC' }).key);
    expect(keyFor(auth, { authorization: 'Basic dXNlcjpwYXNz' }).key).toBe(`apikey:${sha('basic dXNlcjpwYXNz')}`);
    // A bare token (no scheme) is all credential: 'Key1' and 'key1' are two clients.
    expect(keyFor(auth, { authorization: 'Key1' }).key).toBe(`apikey:${sha('Key1')}`);
    // Not a token, so not a scheme: hashed as sent.
    expect(keyFor(auth, { authorization: 'B@d  x' }).key).toBe(`apikey:${sha('B@d  x')}`);
    expect(keyFor(headerKey('x-api-key'), { 'x-api-key': 'Bearer  x' }).key).toBe(`apikey:${sha('Bearer  x')}`);
  });

  it('treats secret: undefined as no secret', () => {
    expect(keyFor(headerKey('x-api-key', { secret: undefined }), { 'x-api-key': 'k' }).key).toBe(`apikey:${sha('k')}`);
  });
});

describe('keys.header(): remembered keys of recent values', () => {
  it('gives a repeated value the same key, hashed or HMAC-ed', () => {
    for (const options of [{}, { secret: 's3cret' }]) {
      const key = headerKey('x-api-key', options);
      const first = keyFor(key, { 'x-api-key': 'sk_live_abc123' }).key;
      expect(keyFor(key, { 'x-api-key': ' sk_live_abc123\t' }).key).toBe(first);
      expect(keyFor(key, { 'x-api-key': 'sk_live_abc123' }).key).toBe(first);
    }
  });

  it('never shares keys between secrets, whatever the order of requests', () => {
    const [a, b, plain] = [headerKey('x-api-key', { secret: 'one' }), headerKey('x-api-key', { secret: 'two' }), headerKey('x-api-key')];
    for (let i = 0; i < 3; i++) {
      expect(keyFor(a, { 'x-api-key': 'k' }).key).toBe(`apikey:${createHmac('sha256', 'one').update('k').digest('base64url')}`);
      expect(keyFor(b, { 'x-api-key': 'k' }).key).toBe(`apikey:${createHmac('sha256', 'two').update('k').digest('base64url')}`);
      expect(keyFor(plain, { 'x-api-key': 'k' }).key).toBe(`apikey:${sha('k')}`);
    }
  });

  it('keys long values and more values than it remembers correctly', () => {
    const key = headerKey('x-api-key');
    const long = 'k'.repeat(MAX_RECENT_VALUE_LENGTH + 1);
    expect(keyFor(key, { 'x-api-key': long }).key).toBe(`apikey:${sha(long)}`);
    expect(keyFor(key, { 'x-api-key': long }).key).toBe(`apikey:${sha(long)}`);
    const values = Array.from({ length: RECENT_KEYS_SIZE + 5 }, (_, i) => `sk_${i}`);
    for (const value of [...values, ...values.toReversed()]) {
      expect(keyFor(key, { 'x-api-key': value }).key).toBe(`apikey:${sha(value)}`);
    }
  });

  it('still refuses a value with unpaired surrogates after a well-formed one', () => {
    const key = headerKey('x-api-key');
    expect(keyFor(key, { 'x-api-key': 'ok' }).key).toBe(`apikey:${sha('ok')}`);
    const { key: bad, warnings } = keyFor(key, { 'x-api-key': 'ok\uD800' });
    expect(bad).toBeUndefined();
    expect(warnings[0]).toMatch(/^WRN_RL_INVALID_KEY_ID: /);
  });
});
