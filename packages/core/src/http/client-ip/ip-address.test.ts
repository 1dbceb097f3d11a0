import { describe, expect, it } from 'vitest';
import { formatIpAddress, networkAddress, parseIpAddress } from './ip-address.js';

const canonical = (text: string) => {
  const address = parseIpAddress(text);
  return address === undefined ? undefined : formatIpAddress(address);
};

describe('parseIpAddress', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['0.0.0.0', '0.0.0.0'],
    ['255.255.255.255', '255.255.255.255'],
    ['2001:db8::1', '2001:db8::1'],
    ['2001:0DB8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
    ['2001:DB8::A', '2001:db8::a'],
    ['::1', '::1'],
    ['::', '::'],
    ['fe80::1%eth0', 'fe80::1'],
    ['fe80::1%en0.100', 'fe80::1'],
    // How Node reports a link-local peer on Linux: the interface's name, which may hold `_` (isIP refuses it).
    ['fe80::1%docker_gwbridge', 'fe80::1'],
    ['fe80::1%wg~0', 'fe80::1'],
    ['::ffff:1.2.3.4%wg_0', '1.2.3.4'],
    ['1:0:0:0:0:0:1.2.3.4%wg_0', '1::102:304'],
  ])('reads %s as %s', (text, expected) => {
    expect(canonical(text)).toBe(expected);
  });

  it.each([
    ['::ffff:203.0.113.7'],
    ['::FFFF:203.0.113.7'],
    ['::ffff:cb00:7107'],
    ['::FFFF:CB00:7107'],
    ['0:0:0:0:0:ffff:cb00:7107'],
    ['0000:0000:0000:0000:0000:FFFF:203.0.113.7'],
  ])('reads the IPv4-mapped %s as the IPv4 address', (text) => {
    const address = parseIpAddress(text);
    expect(address?.kind()).toBe('ipv4');
    expect(canonical(text)).toBe('203.0.113.7');
  });

  it.each([
    ['', 'empty'],
    [' 203.0.113.7', 'leading space'],
    ['203.0.113.7 ', 'trailing space'],
    ['203.0.113.7:80', 'port'],
    ['[2001:db8::1]', 'brackets'],
    ['010.0.0.1', 'leading zero (octal in some parsers)'],
    ['0x7f.1', 'hex IPv4'],
    ['2130706433', 'IPv4 as one number'],
    ['127.1', 'short IPv4'],
    ['256.0.0.1', 'octet out of range'],
    ['1:2:3:4:5:6:7:8:9', 'nine groups'],
    ['2001:db8::1::2', 'two ::'],
    ['fe80::1%', 'empty zone id'],
    ['fe80::1%eth 0', 'space in zone id'],
    ['fe80::1%eth/0', 'slash in zone id'],
    ['1.2.3.4%eth0', 'zone id on IPv4'],
    ['fe80::1%eth0\n', 'newline'],
    ['unknown', 'RFC 7239 unknown'],
    ['_hidden', 'obfuscated'],
    ['localhost', 'hostname'],
    [`2001:db8::1%${'a'.repeat(60)}`, 'longer than 64 characters'],
  ])('refuses %j (%s)', (text) => {
    expect(parseIpAddress(text)).toBeUndefined();
  });
});

describe('networkAddress', () => {
  it.each([
    ['203.0.113.7', 32, '203.0.113.7'],
    ['203.0.113.7', 24, '203.0.113.0'],
    ['203.0.113.7', 20, '203.0.112.0'],
    ['203.0.113.7', 0, '0.0.0.0'],
    ['2001:db8:1:2:3:4:5:6', 64, '2001:db8:1:2::'],
    ['2001:db8:1:2:3:4:5:6', 56, '2001:db8:1::'],
    ['2001:db8:1:2ff:3:4:5:6', 60, '2001:db8:1:2f0::'],
    ['2001:db8:1:2:3:4:5:6', 128, '2001:db8:1:2:3:4:5:6'],
    ['2001:db8:1:2:3:4:5:6', 0, '::'],
  ])('%s/%i is %s', (text, prefix, expected) => {
    const address = parseIpAddress(text);
    if (address === undefined) throw new Error(`fixture ${text} does not parse`);
    expect(formatIpAddress(networkAddress(address, prefix))).toBe(expected);
  });
});
