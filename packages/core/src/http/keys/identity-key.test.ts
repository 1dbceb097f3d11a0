import { describe, expect, it } from 'vitest';
import { RateLimitConfigError } from '../../errors.js';
import { requestView, viewFactory } from '../../testing/request-view-fixture.js';
import { type IdFunction, tenantKey, userKey } from './identity-key.js';

interface Req {
  user?: { id?: unknown };
}

function run(fn: IdFunction<Req>, request: Req, make = userKey<Req>) {
  const { view, logger } = requestView<Req>({ remoteAddress: '203.0.113.7', request });
  return { key: make(fn)(request, view), warnings: logger.warnings };
}

const byUserId: IdFunction<Req> = (req) => req.user?.id as string | number | undefined;

describe('keys.user() and keys.tenant()', () => {
  it.each<[unknown, string | undefined]>([
    ['42', 'user:42'],
    [42, 'user:42'],
    [42n, 'user:42'],
    [-0, 'user:0'],
    [1.5, 'user:1.5'],
    ['alice@example.com', 'user:alice@example.com'],
    ['line\nbreak', 'user:line%0Abreak'],
    [undefined, undefined],
    [null, undefined],
    ['', undefined],
  ])('id %s -> %s', (id, expected) => {
    expect(run(byUserId, { user: { id } })).toEqual({ key: expected, warnings: [] });
  });

  it('namespaces tenants apart from users', () => {
    expect(run(byUserId, { user: { id: 7 } }, tenantKey<Req>).key).toBe('tenant:7');
    expect(run(byUserId, { user: { id: 7 } }).key).toBe('user:7');
  });

  it('hashes long ids instead of truncating them', () => {
    const a = run(byUserId, { user: { id: `${'u'.repeat(300)}a` } }).key;
    const b = run(byUserId, { user: { id: `${'u'.repeat(300)}b` } }).key;
    expect(a).toMatch(/^user:#[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
  });

  it('supports async id functions', async () => {
    const { view } = requestView<Req>({ request: {} });
    const key = userKey<Req>(async () => 'u1')({}, view);
    expect(key).toBeInstanceOf(Promise);
    await expect(key).resolves.toBe('user:u1');
    await expect(tenantKey<Req>(async () => undefined)({}, view)).resolves.toBeUndefined();
  });

  it('passes the request and the view to the id function', () => {
    const { view } = requestView<Req>({ request: { user: { id: 'r' } }, headers: { 'x-tenant': 't9' } });
    expect(tenantKey<Req>((_req, v) => v.headers['x-tenant'] as string)(view.request, view)).toBe('tenant:t9');
  });

  it.each<[unknown, string]>([
    [Number.NaN, 'NaN'],
    [Number.POSITIVE_INFINITY, 'Infinity'],
    [true, 'boolean'],
    [{ id: 1 }, 'object'],
    [Symbol('s'), 'symbol'],
    ['\uD800', 'unpaired UTF-16 surrogates'],
  ])('yields undefined for an unusable id (%s) and warns once', (id, described) => {
    const factory = viewFactory();
    const key = userKey<Req>(() => id as string);
    expect(key({}, factory.view<Req>({}))).toBeUndefined();
    expect(key({}, factory.view<Req>({}))).toBeUndefined();
    expect(factory.logger.warnings).toHaveLength(1);
    expect(factory.logger.warnings[0]).toMatch(/^WRN_RL_INVALID_KEY_ID: The keys\.user\(\) id function returned /);
    expect(factory.logger.warnings[0]).toContain(described);
  });

  it('lets an error thrown by the id function propagate', () => {
    const { view } = requestView<Req>({});
    expect(() =>
      userKey<Req>(() => {
        throw new Error('session store down');
      })({}, view),
    ).toThrow('session store down');
  });

  it.each([[undefined], ['req.user.id'], [{}]])('rejects a non-function: %j', (fn) => {
    expect(() => userKey(fn as never)).toThrow(RateLimitConfigError);
    try {
      tenantKey(fn as never);
    } catch (error) {
      expect((error as RateLimitConfigError).code).toBe('ERR_RL_INVALID_KEY_FUNCTION');
      expect((error as RateLimitConfigError).option).toBe('keys.tenant(fn)');
    }
  });
});
