import { describe, expect, it } from 'vitest';
import { RateLimitConfigError } from '../../errors.js';
import { type IpAddress, parseIpAddress } from './ip-address.js';
import { compileTrustedProxies, TRUSTED_PROXY_PRESETS } from './trusted-proxies.js';

function trusts(option: unknown, address: string): boolean {
  const parsed = parseIpAddress(address);
  if (parsed === undefined) throw new Error(`fixture ${address} does not parse`);
  return compileTrustedProxies(option, 'trustedProxies').has(parsed);
}

function configError(option: unknown): RateLimitConfigError {
  try {
    compileTrustedProxies(option, 'keys.ip.trustedProxies');
  } catch (error) {
    if (error instanceof RateLimitConfigError) return error;
    throw error;
  }
  throw new Error(`expected ${JSON.stringify(option)} to be rejected`);
}

describe('compileTrustedProxies', () => {
  it.each([
    ['loopback', '127.0.0.1', true],
    ['loopback', '127.255.0.9', true],
    ['loopback', '::1', true],
    ['loopback', '::ffff:127.0.0.1', true],
    ['loopback', '10.0.0.1', false],
    ['linklocal', '169.254.10.1', true],
    ['linklocal', 'fe80::1%eth0', true],
    ['linklocal', 'febf::1', true],
    ['linklocal', 'fec0::1', false],
    ['uniquelocal', '10.1.2.3', true],
    ['uniquelocal', '172.16.0.1', true],
    ['uniquelocal', '172.31.255.255', true],
    ['uniquelocal', '172.32.0.1', false],
    ['uniquelocal', '192.168.1.1', true],
    ['uniquelocal', 'fd12::1', true],
    ['uniquelocal', 'fc00::1', true],
    ['uniquelocal', '169.254.1.1', false],
    ['private', '10.1.2.3', true],
    ['private', '169.254.1.1', true],
    ['private', 'fe80::1', true],
    ['private', 'fd00::1', true],
    ['private', '127.0.0.1', false],
    ['private', '203.0.113.7', false],
  ])('preset %s: %s trusted = %s', (preset, address, expected) => {
    expect(trusts(preset, address)).toBe(expected);
  });

  it.each([
    ['10.0.0.0/8', '10.200.0.1', true],
    ['10.0.0.0/8', '11.0.0.1', false],
    ['203.0.113.7', '203.0.113.7', true],
    ['203.0.113.7', '203.0.113.8', false],
    ['203.0.113.7', '::ffff:203.0.113.7', true],
    ['203.0.113.7/32', '::ffff:cb00:7107', true],
    ['2001:db8::/32', '2001:db8:ffff::1', true],
    ['2001:db8::/32', '2001:db9::1', false],
    ['2001:DB8::/32', '2001:db8::1', true],
    ['::1', '::1', true],
    ['::ffff:10.0.0.0/104', '10.9.9.9', true],
    ['::ffff:10.0.0.0/104', '11.0.0.1', false],
    ['::ffff:10.0.0.7', '10.0.0.7', true],
    ['0.0.0.0/0', '203.0.113.7', true],
    ['0.0.0.0/0', '2001:db8::1', false],
    ['::/0', '2001:db8::1', true],
    ['::/0', '203.0.113.7', false],
  ])('%s: %s trusted = %s', (cidr, address, expected) => {
    expect(trusts(cidr, address)).toBe(expected);
  });

  it('takes a single string, a list, or nothing', () => {
    expect(trusts(['10.0.0.0/8', 'loopback'], '127.0.0.1')).toBe(true);
    expect(compileTrustedProxies(undefined, 'p').empty).toBe(true);
    expect(compileTrustedProxies([], 'p').empty).toBe(true);
    expect(compileTrustedProxies('loopback', 'p').empty).toBe(false);
  });

  it('reports the entries that trust a whole family, as written', () => {
    expect(compileTrustedProxies(['10.0.0.0/8', '0.0.0.0/0', '::/0'], 'p').permissive).toEqual(['0.0.0.0/0', '::/0']);
    expect(compileTrustedProxies(['::ffff:0.0.0.0/96'], 'p').permissive).toEqual(['::ffff:0.0.0.0/96']);
    expect(compileTrustedProxies(['private', 'loopback'], 'p').permissive).toEqual([]);
    // Together: two halves, four quarters, or half the space in overlapping pieces.
    expect(compileTrustedProxies(['0.0.0.0/1', '128.0.0.0/1'], 'p').permissive).toEqual(['0.0.0.0/1']);
    expect(compileTrustedProxies(['128.0.0.0/1'], 'p').permissive).toEqual(['128.0.0.0/1']);
    expect(compileTrustedProxies(['::/1', '10.0.0.0/8'], 'p').permissive).toEqual(['::/1']);
    // IPv6 clients come from 2000::/3 (global unicast): trusting it, or half of it, trusts them all; ULAs do not count.
    expect(compileTrustedProxies(['2000::/3'], 'p').permissive).toEqual(['2000::/3']);
    expect(compileTrustedProxies(['2000::/4', 'fc00::/7'], 'p').permissive).toEqual(['2000::/4']);
    expect(compileTrustedProxies(['2000::/5', '2800::/6', 'fc00::/7', '4000::/2'], 'p').permissive).toEqual([]);
    expect(compileTrustedProxies(['0.0.0.0/2', '64.0.0.0/3', '64.0.0.0/2', '10.0.0.0/8'], 'p').permissive).toEqual([
      '0.0.0.0/2',
      '64.0.0.0/2',
    ]);
    expect(compileTrustedProxies(['0.0.0.0/2', '64.0.0.0/3', '96.0.0.0/3'], 'p').permissive).toEqual([
      '0.0.0.0/2',
      '64.0.0.0/3',
      '96.0.0.0/3',
    ]);
    // Short of half: a quarter and an eighth, overlaps counted once; nor does one family make the other permissive.
    expect(compileTrustedProxies(['0.0.0.0/2', '64.0.0.0/3', '0.0.0.0/3', '8000::/2'], 'p').permissive).toEqual([]);
    expect(compileTrustedProxies(['0.0.0.0/2', '::ffff:64.0.0.0/98'], 'p').permissive).toEqual(['0.0.0.0/2', '::ffff:64.0.0.0/98']);
  });

  it('counts ranges inside the NAT64 prefixes it is given as IPv4, as keys.ip keys them', () => {
    const wellKnown = parseIpAddress('64:ff9b::') as IpAddress;
    const own = parseIpAddress('2001:db8:64::') as IpAddress;
    const permissive = (list: string[], nat64 = [wellKnown]) => compileTrustedProxies(list, 'p', nat64).permissive;
    expect(permissive(['loopback', '64:ff9b::/96'])).toEqual(['64:ff9b::/96']);
    expect(permissive(['64:ff9b::/97'])).toEqual(['64:ff9b::/97']);
    expect(permissive(['64::/16'])).toEqual(['64::/16']);
    // Halves that add up across notations: IPv4 0/1 and the translated 128/1.
    expect(permissive(['0.0.0.0/2', '64:ff9b::4000:0/98'])).toEqual(['0.0.0.0/2', '64:ff9b::4000:0/98']);
    // `::/0` holds both 2000::/3 and the NAT64 prefix: named once.
    expect(permissive(['::/0'])).toEqual(['::/0']);
    // The proxies' own embedded addresses are narrow; a network-specific prefix counts once it is configured.
    expect(permissive(['64:ff9b::10.0.0.0/104', '64:ff9b::/98'])).toEqual([]);
    expect(permissive(['2001:db8:64::/96'])).toEqual([]);
    expect(permissive(['2001:db8:64::/96'], [wellKnown, own])).toEqual(['2001:db8:64::/96']);
    expect(permissive(['64:ff9b::/96'], [])).toEqual([]);
  });

  it('has presets with the documented ranges', () => {
    expect(TRUSTED_PROXY_PRESETS.private).toEqual([...TRUSTED_PROXY_PRESETS.uniquelocal, ...TRUSTED_PROXY_PRESETS.linklocal]);
    expect(Object.isFrozen(TRUSTED_PROXY_PRESETS.loopback)).toBe(true);
  });

  it.each([
    ['10.0.0.0/33', 'prefix length outside 0-32'],
    ['2001:db8::/129', 'prefix length outside 0-128'],
    ['10.0.0.0/', 'prefix length'],
    ['10.0.0.0/08', 'prefix length that is not a plain number'],
    ['10.0.0.0/8 ', 'prefix length that is not a plain number'],
    ['10.0.0.0/8\n', 'prefix length that is not a plain number'],
    ['10.0.0.0/-1', 'prefix length'],
    ['10.0.0.0/8/8', 'prefix length'],
    ['10.0.0.1/8', "did you mean '10.0.0.0/8'"],
    ['2001:db8::1/32', "did you mean '2001:db8::/32'"],
    ['10.0.0', 'must be a CIDR'],
    ['010.0.0.1', 'must be a CIDR'],
    ['10.0.0.0/255.0.0.0', 'prefix length'],
    [' 10.0.0.1', 'must be a CIDR'],
    ['fe80::1%eth0', 'must be a CIDR'],
    ['::ffff:10.0.0.0/64', 'IPv4-mapped range shorter than /96'],
    ['', 'must be a CIDR'],
    ['cloudflare', 'not a known preset'],
    ['Loopback', 'not a known preset'],
    ['constructor', 'not a known preset'],
  ])('rejects %j (%s)', (entry, fragment) => {
    const error = configError(['loopback', entry]);
    expect(error.code).toBe('ERR_RL_INVALID_TRUSTED_PROXY');
    expect(error.option).toBe('keys.ip.trustedProxies[1]');
    expect(error.message).toContain(fragment);
  });

  it.each([[42], [null], [true], [{}], [['10.0.0.0/8', 7]]])('rejects non-strings: %j', (option) => {
    const error = configError(option);
    expect(error.code).toBe('ERR_RL_INVALID_TRUSTED_PROXY');
    expect(error.message).toContain('must be a string');
  });

  it('names a single-string option without an index', () => {
    expect(configError('nope').option).toBe('keys.ip.trustedProxies');
  });
});
