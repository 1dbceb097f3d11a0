import { describe, expect, it } from 'vitest';
import { resolveClientAddress } from '../../testing/client-address.js';
import { requestView, viewFactory } from '../../testing/request-view-fixture.js';
import type { HeaderBag } from '../request-view.js';
import type { ClientAddressConfig } from './client-address.js';
import type { ForwardingHeader } from './forwarded-header.js';
import { formatIpAddress } from './ip-address.js';
import { compileTrustedProxies } from './trusted-proxies.js';

function config(trusted: string[], header: ForwardingHeader = 'x-forwarded-for'): ClientAddressConfig {
  return { trustedProxies: compileTrustedProxies(trusted, 'trustedProxies'), header };
}

function resolve(cfg: ClientAddressConfig, remoteAddress: string | undefined, headers: HeaderBag = {}) {
  const { view, logger } = requestView({ remoteAddress, headers });
  const address = resolveClientAddress(view, cfg);
  return { address: address === undefined ? undefined : formatIpAddress(address), warnings: logger.warnings };
}

const behindLb = config(['loopback', '10.0.0.0/8']);

describe('resolveClientAddress: the trusted-proxy walk', () => {
  it.each<[string, string, HeaderBag, string]>([
    ['untrusted peer, no header', '203.0.113.7', {}, '203.0.113.7'],
    ['untrusted peer, spoofed XFF ignored', '203.0.113.7', { 'x-forwarded-for': '198.51.100.1' }, '203.0.113.7'],
    ['untrusted peer, spoofed Forwarded ignored', '203.0.113.7', { forwarded: 'for=198.51.100.1' }, '203.0.113.7'],
    ['trusted peer, no header: the proxy itself', '10.0.0.1', {}, '10.0.0.1'],
    ['one hop', '10.0.0.1', { 'x-forwarded-for': '203.0.113.7' }, '203.0.113.7'],
    ['skips trusted hops', '10.0.0.1', { 'x-forwarded-for': '203.0.113.7, 10.0.0.3, 127.0.0.1' }, '203.0.113.7'],
    ['first untrusted from the right wins', '10.0.0.1', { 'x-forwarded-for': '1.1.1.1, 2.2.2.2, 203.0.113.7' }, '203.0.113.7'],
    ['client-prepended spoof left of the real hop', '10.0.0.1', { 'x-forwarded-for': '10.0.0.9, 203.0.113.7' }, '203.0.113.7'],
    ['all trusted: the furthest hop', '10.0.0.1', { 'x-forwarded-for': '10.0.0.3, 10.0.0.2' }, '10.0.0.3'],
    ['garbage right of the client stops at the proxy', '10.0.0.1', { 'x-forwarded-for': '203.0.113.7, garbage' }, '10.0.0.1'],
    ['garbage left of the client is never reached', '10.0.0.1', { 'x-forwarded-for': 'garbage, 203.0.113.7' }, '203.0.113.7'],
    ['garbage after trusted hops stops at the last one', '10.0.0.1', { 'x-forwarded-for': '203.0.113.7, nope, 10.0.0.2' }, '10.0.0.2'],
    ['empty entry stops the walk', '10.0.0.1', { 'x-forwarded-for': '203.0.113.7,,10.0.0.2' }, '10.0.0.2'],
    ['empty header', '10.0.0.1', { 'x-forwarded-for': '' }, '10.0.0.1'],
    ['unknown stops the walk', '10.0.0.1', { 'x-forwarded-for': 'unknown' }, '10.0.0.1'],
    ['lenient IPv4 spellings are garbage', '10.0.0.1', { 'x-forwarded-for': '0xcb.0.113.7' }, '10.0.0.1'],
    ['IPv4 with port', '10.0.0.1', { 'x-forwarded-for': '203.0.113.7:51234' }, '203.0.113.7'],
    ['bracketed IPv6 with port', '10.0.0.1', { 'x-forwarded-for': '[2001:db8::7]:443' }, '2001:db8::7'],
    ['zone id dropped', '10.0.0.1', { 'x-forwarded-for': 'fe80::7%eth0' }, 'fe80::7'],
    ['IPv4-mapped hop is IPv4', '10.0.0.1', { 'x-forwarded-for': '::ffff:203.0.113.7' }, '203.0.113.7'],
    ['IPv4-mapped trusted hop is skipped', '10.0.0.1', { 'x-forwarded-for': '203.0.113.7, ::ffff:10.0.0.2' }, '203.0.113.7'],
    ['IPv4-mapped socket is trusted by an IPv4 range', '::ffff:10.0.0.1', { 'x-forwarded-for': '203.0.113.7' }, '203.0.113.7'],
    ['hex IPv4-mapped socket likewise', '::ffff:a00:1', { 'x-forwarded-for': '203.0.113.7' }, '203.0.113.7'],
    ['IPv6 loopback socket', '::1', { 'x-forwarded-for': '2001:db8::7' }, '2001:db8::7'],
    ['multiple header lines joined in order', '10.0.0.1', { 'x-forwarded-for': ['198.51.100.1', '203.0.113.7, 10.0.0.2'] }, '203.0.113.7'],
    ['multiple lines, last line nearest', '10.0.0.1', { 'x-forwarded-for': ['203.0.113.7', '10.0.0.2'] }, '203.0.113.7'],
    ['Forwarded ignored when reading XFF', '10.0.0.1', { forwarded: 'for=203.0.113.7' }, '10.0.0.1'],
  ])('%s', (_name, remote, headers, expected) => {
    expect(resolve(behindLb, remote, headers).address).toBe(expected);
  });

  const forwarded = config(['loopback', '10.0.0.0/8'], 'forwarded');
  it.each<[string, HeaderBag, string]>([
    ['for=203.0.113.7', { forwarded: 'for=203.0.113.7' }, '203.0.113.7'],
    ['quoted IPv6 with port', { forwarded: 'for="[2001:db8:cafe::17]:4711"' }, '2001:db8:cafe::17'],
    ['quoted IPv4 with port', { forwarded: 'for="203.0.113.7:4711";proto=https' }, '203.0.113.7'],
    ['trusted hops skipped', { forwarded: 'for=203.0.113.7;proto=https, for=10.0.0.2;by=10.0.0.1' }, '203.0.113.7'],
    ['unknown stops at the last good hop', { forwarded: 'for=203.0.113.7, for=unknown, for=10.0.0.2' }, '10.0.0.2'],
    ['obfuscated stops', { forwarded: 'for=_hidden' }, '10.0.0.1'],
    ['element without for stops', { forwarded: 'for=203.0.113.7, proto=https' }, '10.0.0.1'],
    ['multiple lines', { forwarded: ['for=198.51.100.1', 'for=203.0.113.7'] }, '203.0.113.7'],
    ['client quote junk left of our entry', { forwarded: 'for="oops, for=203.0.113.7' }, '203.0.113.7'],
    ['X-Forwarded-For ignored when reading Forwarded', { 'x-forwarded-for': '203.0.113.7' }, '10.0.0.1'],
  ])('Forwarded: %s', (_name, headers, expected) => {
    expect(resolve(forwarded, '10.0.0.1', headers).address).toBe(expected);
  });

  it('returns undefined without a usable socket address, warning once per code', () => {
    const factory = viewFactory();
    for (const remoteAddress of [undefined, undefined, '', '/tmp/app.sock', 'garbage']) {
      expect(resolveClientAddress(factory.view({ remoteAddress }), behindLb)).toBeUndefined();
    }
    expect(factory.logger.warnings).toHaveLength(2);
    expect(factory.logger.warnings[0]).toMatch(/^WRN_RL_UNDEFINED_REMOTE_ADDRESS: /);
    expect(factory.logger.warnings[1]).toMatch(/^WRN_RL_INVALID_REMOTE_ADDRESS: /);
    expect(factory.logger.warnings[1]).not.toContain('app.sock');
  });
});

describe('resolveClientAddress: diagnostics', () => {
  it('warns once when an untrusted peer sends a forwarding header, naming the peer', () => {
    const { logger, view } = viewFactory();
    for (let i = 0; i < 3; i++) {
      resolveClientAddress(view({ remoteAddress: '::ffff:192.0.2.9', headers: { 'x-forwarded-for': '1.2.3.4' } }), config([]));
    }
    expect(logger.warnings).toHaveLength(1);
    expect(logger.warnings[0]).toMatch(
      /^WRN_RL_UNTRUSTED_FORWARDED_HEADER: A request carries the X-Forwarded-For header, but its peer \(the field 'peer'\)/,
    );
    expect(logger.warnings[0]).toContain('trustedProxies');
    // The client's address is in the fields only (a logger can redact them), never in the text.
    expect(logger.warnings[0]?.split(' {')[0]).not.toContain('192.0.2.9');
    expect(logger.warnings[0]).toContain('"peer":"192.0.2.9"');
  });

  it('warns about the other forwarding header too (an untrusted peer sending Forwarded)', () => {
    expect(resolve(config([]), '192.0.2.9', { forwarded: 'for=1.2.3.4' }).warnings[0]).toContain('carries the Forwarded header');
  });

  it('stays quiet for an untrusted peer without forwarding headers, and for a blank header', () => {
    expect(resolve(config([]), '192.0.2.9', {}).warnings).toEqual([]);
    expect(resolve(config([]), '192.0.2.9', { 'x-forwarded-for': '  ' }).warnings).toEqual([]);
  });

  it('can be switched off', () => {
    const { view, logger } = requestView({
      remoteAddress: '192.0.2.9',
      headers: { 'x-forwarded-for': '1.2.3.4' },
      validate: { WRN_RL_UNTRUSTED_FORWARDED_HEADER: false },
    });
    resolveClientAddress(view, config([]));
    expect(logger.warnings).toEqual([]);
  });

  it('warns when a trusted proxy sends only the header keys.ip() does not read', () => {
    const { warnings } = resolve(config(['10.0.0.0/8'], 'forwarded'), '10.0.0.1', { 'x-forwarded-for': '203.0.113.7' });
    expect(warnings[0]).toMatch(/^WRN_RL_IGNORED_FORWARDED_HEADER: A trusted proxy \(the field 'proxy'\) sent X-Forwarded-For/);
    expect(warnings[0]).toContain('"proxy":"10.0.0.1"');
    expect(warnings[0]).toContain("header: 'x-forwarded-for'");
  });

  it('warns when the walk stops at a malformed entry, without echoing the entry', () => {
    const { address, warnings } = resolve(behindLb, '10.0.0.1', { 'x-forwarded-for': '203.0.113.7, evil\u001b[31m' });
    expect(address).toBe('10.0.0.1');
    expect(warnings[0]).toMatch(/^WRN_RL_MALFORMED_FORWARDED_HEADER: .*a trusted hop \(the field 'hop'\)/);
    expect(warnings[0]).toContain('"hop":"10.0.0.1"');
    expect(warnings[0]).not.toContain('evil');
  });

  it('never lets a throwing logger break the request', () => {
    const { view } = requestView(
      { remoteAddress: '192.0.2.9', headers: { 'x-forwarded-for': '1.2.3.4' } },
      {
        warnings: [],
        errors: [],
        warn() {
          throw new Error('logger down');
        },
        error() {},
      },
    );
    expect(() => resolveClientAddress(view, config([]))).not.toThrow();
  });
});
