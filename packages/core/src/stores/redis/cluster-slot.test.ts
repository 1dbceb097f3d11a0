import { describe, expect, it } from 'vitest';
import { keySlot } from './cluster-slot.js';

describe('keySlot', () => {
  it('gives the slots Redis gives (CLUSTER KEYSLOT), whole names and hash tags alike', () => {
    // Values from redis-cli CLUSTER KEYSLOT; CRC16/XMODEM of "123456789" is 0x31C3.
    expect(keySlot('123456789')).toBe(0x31c3 % 16384);
    expect(keySlot('foo')).toBe(12182);
    expect(keySlot('hello')).toBe(866);
    expect(keySlot('somekey')).toBe(11058);
    expect(keySlot('{user1000}.following')).toBe(keySlot('user1000'));
    expect(keySlot('tollgate:{ip:10.0.0.1}:default:gc:100/60000')).toBe(keySlot('ip:10.0.0.1'));
  });

  it('hashes the first tag only, and the whole name when that tag is empty or unclosed (the examples of the Cluster spec)', () => {
    expect(keySlot('foo{bar}{zap}')).toBe(keySlot('bar'));
    expect(keySlot('foo{{bar}}zap')).toBe(keySlot('{bar'));
    // 'foo{}{bar}' has an empty first tag: the whole name is hashed (Redis gives 8363, not bar's 5061).
    expect(keySlot('bar')).toBe(5061);
    expect(keySlot('foo{}{bar}')).toBe(8363);
    expect(keySlot('{a')).not.toBe(keySlot('a'));
  });

  it('hashes the UTF-8 bytes of the tag', () => {
    expect(keySlot('{🚦}')).toBe(keySlot('🚦'));
    expect(keySlot('🚦')).not.toBe(keySlot('\ud83d'));
  });
});
