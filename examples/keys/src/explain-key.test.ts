import { keys } from '@tollgate/core';
import { describe, expect, it } from 'vitest';
import { explainKey } from './explain-key.js';

describe('examples/keys', () => {
  it('keys a proxied client by its address and ignores spoofing from an untrusted peer', async () => {
    const ip = keys.ip({ trustedProxies: ['10.0.0.0/8'] });
    expect(await explainKey(ip, { remoteAddress: '10.0.0.1', headers: { 'x-forwarded-for': '1.2.3.4, 203.0.113.7' } })).toEqual({
      key: 'ip:203.0.113.7',
      warnings: [],
    });
    const spoofed = await explainKey(ip, { remoteAddress: '198.51.100.20', headers: { 'x-forwarded-for': '1.2.3.4' } });
    expect(spoofed.key).toBe('ip:198.51.100.20');
    expect(spoofed.warnings[0]).toMatch(/^WRN_RL_UNTRUSTED_FORWARDED_HEADER/);
  });
});
