import { describe, expect, it } from 'vitest';
import { configError } from '../../testing/config-error.js';
import { recordingLogger, requestView, viewFactory } from '../../testing/request-view-fixture.js';
import type { HeaderBag } from '../request-view.js';
import { type IpKeyOptions, ipKey, SOCKET_CACHE_SIZE } from './ip-key.js';

function keyFor(options: IpKeyOptions, remoteAddress: string | undefined, headers: HeaderBag = {}) {
  const { view } = requestView({ remoteAddress, headers });
  return ipKey(options)({}, view);
}

describe('keys.ip(): keys by range, not notation', () => {
  it.each([
    ['203.0.113.7', 'ip:203.0.113.7'],
    ['::ffff:203.0.113.7', 'ip:203.0.113.7'],
    ['::FFFF:203.0.113.7', 'ip:203.0.113.7'],
    ['::ffff:cb00:7107', 'ip:203.0.113.7'],
    ['0:0:0:0:0:ffff:cb00:7107', 'ip:203.0.113.7'],
    ['64:ff9b::203.0.113.7', 'ip:203.0.113.7'],
    ['64:ff9b::cb00:7107', 'ip:203.0.113.7'],
    ['2001:db8:1:2::1', 'ip:2001:db8:1:2::/64'],
    ['2001:db8:1:2:ffff:ffff:ffff:ffff', 'ip:2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002:0000:0000:0000:0001', 'ip:2001:db8:1:2::/64'],
    ['2001:DB8:1:2:A:B:C:D', 'ip:2001:db8:1:2::/64'],
    ['fe80::1%eth0', 'ip:fe80::/64'],
    ['fe80::2%eth1', 'ip:fe80::/64'],
    ['::1', 'ip:::/64'],
    // 64:ff9b:1::/48 is the local-use translation prefix (RFC 8215): plain IPv6 unless configured.
    ['64:ff9b:1::cb00:7107', 'ip:64:ff9b:1::/64'],
    // An IPv6 address that merely ends in a dotted quad is IPv6 (the peer bug keyed it as IPv4).
    ['2001:db8:1:2::203.0.113.7', 'ip:2001:db8:1:2::/64'],
  ])('socket %s -> %s', (address, expected) => {
    expect(keyFor({}, address)).toBe(expected);
  });

  it('gives every IPv4 client on a dual-stack socket its own key (CVE-2026-30827)', () => {
    const seen = new Set(['::ffff:203.0.113.7', '::ffff:203.0.113.8', '::ffff:198.51.100.1'].map((a) => keyFor({}, a)));
    expect(seen.size).toBe(3);
  });

  it('puts the addresses of one /64 in one bucket and neighbouring /64s in others', () => {
    const inside = ['2001:db8:1:2::1', '2001:db8:1:2:dead:beef::9', '2001:db8:1:2:ffff:ffff:ffff:fffe'].map((a) => keyFor({}, a));
    expect(new Set(inside).size).toBe(1);
    expect(keyFor({}, '2001:db8:1:3::1')).not.toBe(inside[0]);
    expect(keyFor({}, '2001:db8:1:1:ffff:ffff:ffff:ffff')).not.toBe(inside[0]);
  });

  it.each<[IpKeyOptions, string, string]>([
    [{ ipv6Prefix: 56 }, '2001:db8:1:2ff::1', 'ip:2001:db8:1:200::/56'],
    [{ ipv6Prefix: 48 }, '2001:db8:1:2::1', 'ip:2001:db8:1::/48'],
    [{ ipv6Prefix: 128 }, '2001:DB8::0001', 'ip:2001:db8::1'],
    [{ ipv6Prefix: 128 }, 'fe80::1%eth0', 'ip:fe80::1'],
    [{ ipv6Prefix: 32 }, '2001:db8:1:2::1', 'ip:2001:db8::/32'],
    [{ ipv4Prefix: 24 }, '203.0.113.7', 'ip:203.0.113.0/24'],
    [{ ipv4Prefix: 24 }, '::ffff:203.0.113.7', 'ip:203.0.113.0/24'],
    [{ ipv4Prefix: 24 }, '64:ff9b::203.0.113.7', 'ip:203.0.113.0/24'],
    [{ ipv4Prefix: 16 }, '203.0.113.7', 'ip:203.0.0.0/16'],
    [{ nat64Prefixes: [] }, '64:ff9b::203.0.113.7', 'ip:64:ff9b::/64'],
    [{ nat64Prefixes: ['2001:db8:64::/96'] }, '2001:db8:64::cb00:7107', 'ip:203.0.113.7'],
    [{ nat64Prefixes: ['2001:db8:64::/96'] }, '64:ff9b::cb00:7107', 'ip:64:ff9b::/64'],
  ])('%j: %s -> %s', (options, address, expected) => {
    expect(keyFor(options, address)).toBe(expected);
  });

  it('keys a forwarded client the same way as a direct one', () => {
    const options: IpKeyOptions = { trustedProxies: 'private' };
    expect(keyFor(options, '10.0.0.1', { 'x-forwarded-for': '2001:db8:1:2::77' })).toBe('ip:2001:db8:1:2::/64');
    expect(keyFor(options, '10.0.0.1', { 'x-forwarded-for': '::ffff:cb00:7107' })).toBe('ip:203.0.113.7');
    expect(keyFor({ ...options, header: 'forwarded' }, 'fd00::1', { forwarded: 'for="[2001:DB8:1:2::77]:443"' })).toBe(
      'ip:2001:db8:1:2::/64',
    );
  });

  it('ignores a spoofed X-Forwarded-For from an untrusted peer', () => {
    const options: IpKeyOptions = { trustedProxies: ['10.0.0.0/8'] };
    const honest = keyFor(options, '203.0.113.7');
    for (const spoof of ['198.51.100.1', '10.0.0.2', '198.51.100.1, 10.0.0.2', 'unknown', '', '2001:db8::1']) {
      expect(keyFor(options, '203.0.113.7', { 'x-forwarded-for': spoof })).toBe(honest);
      expect(keyFor({ ...options, header: 'forwarded' }, '203.0.113.7', { forwarded: `for="${spoof}"` })).toBe(honest);
    }
  });

  it('returns undefined without a socket address', () => {
    expect(keyFor({}, undefined)).toBeUndefined();
  });

  it('does not keep state between requests', () => {
    const key = ipKey({ trustedProxies: 'loopback' });
    const { view } = viewFactory();
    expect(key({}, view({ remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': '203.0.113.7' } }))).toBe('ip:203.0.113.7');
    expect(key({}, view({ remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': '203.0.113.8' } }))).toBe('ip:203.0.113.8');
  });
});

describe('keys.ip(): options', () => {
  it.each<[unknown, string, string, string]>([
    [{ ipv6Prefix: 31 }, 'ERR_RL_INVALID_IPV6_PREFIX', 'keys.ip.ipv6Prefix', 'from 32 to 128'],
    [{ ipv6Prefix: 129 }, 'ERR_RL_INVALID_IPV6_PREFIX', 'keys.ip.ipv6Prefix', 'from 32 to 128'],
    [{ ipv6Prefix: 64.5 }, 'ERR_RL_INVALID_IPV6_PREFIX', 'keys.ip.ipv6Prefix', 'integer'],
    [{ ipv6Prefix: '64' }, 'ERR_RL_INVALID_IPV6_PREFIX', 'keys.ip.ipv6Prefix', 'integer'],
    [{ ipv6Prefix: Number.NaN }, 'ERR_RL_INVALID_IPV6_PREFIX', 'keys.ip.ipv6Prefix', 'integer'],
    [{ ipv4Prefix: 15 }, 'ERR_RL_INVALID_IPV4_PREFIX', 'keys.ip.ipv4Prefix', 'from 16 to 32'],
    [{ ipv4Prefix: 33 }, 'ERR_RL_INVALID_IPV4_PREFIX', 'keys.ip.ipv4Prefix', 'from 16 to 32'],
    [{ header: 'X-Forwarded-For' }, 'ERR_RL_INVALID_IP_HEADER', 'keys.ip.header', "'x-forwarded-for' or 'forwarded'"],
    [{ header: 'x-real-ip' }, 'ERR_RL_INVALID_IP_HEADER', 'keys.ip.header', "'x-forwarded-for' or 'forwarded'"],
    [{ trustedProxies: ['10.0.0.0/99'] }, 'ERR_RL_INVALID_TRUSTED_PROXY', 'keys.ip.trustedProxies[0]', 'prefix length'],
    [{ trustedProxies: 'aws' }, 'ERR_RL_INVALID_TRUSTED_PROXY', 'keys.ip.trustedProxies', 'not a known preset'],
    [{ nat64Prefixes: '64:ff9b::/96' }, 'ERR_RL_INVALID_NAT64_PREFIX', 'keys.ip.nat64Prefixes', 'array'],
    [{ nat64Prefixes: ['64:ff9b::/64'] }, 'ERR_RL_INVALID_NAT64_PREFIX', 'keys.ip.nat64Prefixes[0]', '/96'],
    [{ nat64Prefixes: ['203.0.113.0/24'] }, 'ERR_RL_INVALID_NAT64_PREFIX', 'keys.ip.nat64Prefixes[0]', '/96'],
    [{ nat64Prefixes: ['64:ff9b::1/96'] }, 'ERR_RL_INVALID_NAT64_PREFIX', 'keys.ip.nat64Prefixes[0]', "did you mean '64:ff9b::/96'"],
    [{ nat64Prefixes: [7] }, 'ERR_RL_INVALID_NAT64_PREFIX', 'keys.ip.nat64Prefixes[0]', '/96'],
    [{ logger: {} }, 'ERR_RL_INVALID_LOGGER', 'keys.ip.logger', 'warn()'],
    [{ trustProxy: true }, 'ERR_RL_UNKNOWN_OPTION', 'keys.ip.trustProxy', 'valid: trustedProxies, ipv6Prefix'],
    [null, 'ERR_RL_INVALID_OPTIONS', 'keys.ip', 'options object'],
    ['loopback', 'ERR_RL_INVALID_OPTIONS', 'keys.ip', 'options object'],
  ])('rejects %j', (options, code, option, fragment) => {
    const error = configError(() => ipKey(options as IpKeyOptions));
    expect(error.code).toBe(code);
    expect(error.option).toBe(option);
    expect(error.message).toContain(fragment);
  });

  it('treats undefined options as absent', () => {
    expect(keyFor({ ipv6Prefix: undefined, trustedProxies: undefined }, '2001:db8::1')).toBe('ip:2001:db8::/64');
  });

  it('does not mutate the options', () => {
    const options = Object.freeze({ trustedProxies: Object.freeze(['loopback']) as readonly string[] });
    expect(() => ipKey(options)).not.toThrow();
  });
});

describe('keys.ip(): a trust list that trusts everyone', () => {
  it('warns at construction through the logger option', () => {
    const logger = recordingLogger();
    ipKey({ trustedProxies: ['0.0.0.0/0', '::/0'], logger });
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]).toMatch(/^WRN_RL_PERMISSIVE_TRUSTED_PROXIES: .*'0\.0\.0\.0\/0' and '::\/0'.*bypass/);
  });

  it("its own validate silences it with its own logger, as the middleware's does without one; a bad validate is refused", () => {
    for (const validate of [false, { WRN_RL_PERMISSIVE_TRUSTED_PROXIES: false }] as const) {
      const logger = recordingLogger();
      ipKey({ trustedProxies: '0.0.0.0/0', logger, validate });
      expect(logger.warnings).toEqual([]);
    }
    expect(() => ipKey({ trustedProxies: 'private', validate: { WRN_RL_NOPE: false } as never })).toThrow(
      /ERR_RL_INVALID_OPTION: 'validate\.WRN_RL_NOPE'/,
    );
  });

  it('warns on the first request (once) without a logger option, and still keys', () => {
    const key = ipKey({ trustedProxies: '0.0.0.0/0' });
    const { view, logger } = viewFactory();
    // Trusting everyone means the leftmost (client-written) entry wins: exactly why it is warned about.
    expect(key({}, view({ remoteAddress: '203.0.113.7', headers: { 'x-forwarded-for': '198.51.100.1, 192.0.2.1' } }))).toBe(
      'ip:198.51.100.1',
    );
    key({}, view({ remoteAddress: '203.0.113.7' }));
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]).toMatch(/^WRN_RL_PERMISSIVE_TRUSTED_PROXIES: /);
  });

  it('warns for a NAT64 range, the well-known one or a configured one: it holds every IPv4 client', () => {
    for (const [trustedProxies, nat64Prefixes] of [
      [['loopback', '64:ff9b::/96'], undefined],
      [['loopback', '64:ff9b::/97'], undefined],
      [['2001:db8:64::/96'], ['64:ff9b::/96', '2001:db8:64::/96']],
    ] as const) {
      const logger = recordingLogger();
      ipKey({ trustedProxies, nat64Prefixes, logger });
      expect(logger.warnings).toHaveLength(1);
      expect(logger.warnings[0]).toMatch(/^WRN_RL_PERMISSIVE_TRUSTED_PROXIES: .*'(64:ff9b::\/9[67]|2001:db8:64::\/96)'.*NAT64/);
    }
    // What the warning is about: a client behind the translator writes any IPv4 key it likes.
    const key = ipKey({ trustedProxies: ['loopback', '64:ff9b::/96'], logger: recordingLogger(), validate: false });
    const { view } = viewFactory();
    expect(key({}, view({ remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': '6.6.6.6, 64:ff9b::1.2.3.4' } }))).toBe('ip:6.6.6.6');
  });

  it("does not warn for a translator's own embedded addresses, nor a NAT64 prefix keys.ip keys as IPv6", () => {
    for (const options of [
      { trustedProxies: ['loopback', '64:ff9b::10.0.0.0/104'] },
      { trustedProxies: ['64:ff9b::/96'], nat64Prefixes: [] },
    ]) {
      const logger = recordingLogger();
      ipKey({ ...options, logger });
      expect(logger.warnings).toEqual([]);
    }
  });

  it('does not warn for ordinary lists', () => {
    const logger = recordingLogger();
    const key = ipKey({ trustedProxies: ['private', 'loopback', '203.0.113.0/24'], logger });
    const { view, logger: requestLogger } = viewFactory();
    key({}, view({ remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': '198.51.100.1' } }));
    expect(logger.warnings).toEqual([]);
    expect(requestLogger.warnings).toEqual([]);
  });
});

describe('keys.ip(): remembered IPv6 socket addresses', () => {
  it('gives a repeated socket address the same key as a first visit', () => {
    const key = ipKey({ trustedProxies: 'loopback', ipv6Prefix: 56 });
    const { view } = viewFactory();
    for (const address of ['2001:db8:1:2ff::1', '::ffff:203.0.113.7', '64:ff9b::cb00:7107', '2001:DB8:1:2FF::1%eth0']) {
      const first = key({}, view({ remoteAddress: address }));
      expect(key({}, view({ remoteAddress: address }))).toBe(first);
      expect(first).toBe(keyFor({ ipv6Prefix: 56 }, address));
    }
  });

  it('still warns when a remembered peer sends a forwarding header, naming it canonically', () => {
    const key = ipKey({ trustedProxies: 'loopback' });
    const { view, logger } = viewFactory();
    const address = '2001:DB8:0:0:0:0:0:0001';
    expect(key({}, view({ remoteAddress: address }))).toBe('ip:2001:db8::/64');
    expect(key({}, view({ remoteAddress: address, headers: { forwarded: 'for=198.51.100.1' } }))).toBe('ip:2001:db8::/64');
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]).toMatch(/^WRN_RL_UNTRUSTED_FORWARDED_HEADER: A request carries the Forwarded header/);
    expect(logger.warnings[0]).toContain('"peer":"2001:db8::1"');
  });

  it("remembers a trusted proxy as an address, never as a key: its client comes from each request's headers", () => {
    const key = ipKey({ trustedProxies: 'loopback' });
    const { view } = viewFactory();
    for (const proxy of ['::1', '::ffff:127.0.0.1']) {
      expect(key({}, view({ remoteAddress: proxy, headers: { 'x-forwarded-for': '203.0.113.7' } }))).toBe('ip:203.0.113.7');
      expect(key({}, view({ remoteAddress: proxy, headers: { 'x-forwarded-for': '203.0.113.8' } }))).toBe('ip:203.0.113.8');
      expect(key({}, view({ remoteAddress: proxy }))).toBe(proxy === '::1' ? 'ip:::/64' : 'ip:127.0.0.1');
    }
  });

  it('keys the socket address of the request before again at once, dotted quads too; a trusted proxy is walked every time', () => {
    const key = ipKey({ trustedProxies: 'loopback', ipv4Prefix: 24 });
    const { view, logger } = viewFactory();
    const steps: [string, string | undefined, string][] = [
      ['203.0.113.7', undefined, 'ip:203.0.113.0/24'],
      ['203.0.113.7', undefined, 'ip:203.0.113.0/24'],
      ['198.51.100.9', undefined, 'ip:198.51.100.0/24'],
      ['127.0.0.1', '192.0.2.1', 'ip:192.0.2.0/24'],
      ['127.0.0.1', '192.0.2.200', 'ip:192.0.2.0/24'],
      ['127.0.0.1', '198.18.0.1', 'ip:198.18.0.0/24'],
      ['198.51.100.9', undefined, 'ip:198.51.100.0/24'],
      // The peer keyed just before sends X-Forwarded-For: still ignored, and still warned about.
      ['198.51.100.9', '192.0.2.1', 'ip:198.51.100.0/24'],
    ];
    for (const [remoteAddress, forwardedFor, expected] of steps) {
      const headers = forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor };
      expect(key({}, view({ remoteAddress, headers }))).toBe(expected);
    }
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]).toMatch(/^WRN_RL_UNTRUSTED_FORWARDED_HEADER: A request carries the X-Forwarded-For header, but its peer/);
  });

  it('keeps keying correctly past its capacity', () => {
    const key = ipKey();
    const { view } = viewFactory();
    const addresses = Array.from({ length: SOCKET_CACHE_SIZE * 2 + 7 }, (_, i) => `2001:db8:${(i + 1).toString(16)}:7:6:5:4:3`);
    for (const round of [0, 1]) {
      for (const address of round === 0 ? addresses : addresses.toReversed()) {
        expect(key({}, view({ remoteAddress: address }))).toBe(`ip:${address.slice(0, -8)}::/64`);
      }
    }
  });
});
