import { describe, expect, it } from 'vitest';
import { keys } from '../../index.js';
import { requestView } from '../../testing/request-view-fixture.js';

interface Req {
  user?: { id: string; org: string };
}

describe('keys', () => {
  it('is exported from the package entry point with every extractor', () => {
    expect(Object.keys(keys).sort()).toEqual(['first', 'header', 'ip', 'tenant', 'user']);
    expect(Object.isFrozen(keys)).toBe(true);
  });

  it('composes: user, then API key, then client IP behind a trusted proxy', () => {
    const key = keys.first<Req>(
      keys.user((req: Req) => req.user?.id),
      keys.header('x-api-key'),
      keys.ip({ trustedProxies: ['loopback'] }),
    );
    const signedIn = requestView<Req>({ remoteAddress: '127.0.0.1', request: { user: { id: 'u1', org: 'o1' } } }).view;
    expect(key(signedIn.request, signedIn)).toBe('user:u1');
    const apiClient = requestView<Req>({ remoteAddress: '127.0.0.1', headers: { 'x-api-key': 'k' } }).view;
    expect(key({}, apiClient)).toMatch(/^apikey:/);
    const anonymous = requestView<Req>({ remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': '2001:db8:1:2::99' } }).view;
    expect(key({}, anonymous)).toBe('ip:2001:db8:1:2::/64');
  });

  it('gives every key its namespace, so extractors never collide', () => {
    const same = '203.0.113.7';
    const { view } = requestView({ remoteAddress: same, headers: { 'x-api-key': same } });
    const results = [
      keys.ip()({}, view),
      keys.header('x-api-key')({}, view),
      keys.user(() => same)({}, view),
      keys.tenant(() => same)({}, view),
    ];
    expect(new Set(results).size).toBe(4);
    expect(results.map((k) => String(k).split(':')[0])).toEqual(['ip', 'apikey', 'user', 'tenant']);
  });
});
