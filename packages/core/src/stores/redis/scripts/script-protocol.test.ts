import { describe, expect, it } from 'vitest';
import { RedisStoreError } from '../redis-store-error.js';
import { DEFAULT_COST_MILLI, pushArgs, readReply, replyLua } from './script-protocol.js';

describe('script protocol', () => {
  it('sends no ARGV for a cost of 1 under Redis TIME, the cost otherwise, and cost and now for tests', () => {
    const args = ['k'];
    pushArgs(args, DEFAULT_COST_MILLI, undefined);
    expect(args).toEqual(['k']);
    pushArgs(args, 2500, undefined);
    expect(args).toEqual(['k', '2500']);
    const withNow = ['k'];
    pushArgs(withNow, DEFAULT_COST_MILLI, 1_700_000_000_000);
    expect(withNow).toEqual(['k', '1000', '1700000000000']);
  });

  it('reads 5 integers per policy and now, with the repair mask when there is one, from a string or bytes', () => {
    expect(readReply('5 999568 0 86400 0 1733000000000', 1, 's')).toEqual([5, 999568, 0, 86400, 0, 1733000000000]);
    expect(readReply('0 0 12 3 0 9007199254740991 1', 1, 's')).toEqual([0, 0, 12, 3, 0, 9007199254740991, 1]);
    expect(readReply(Buffer.from('1 2 3 4 5 6 7 8 9 10 11'), 2, 's')).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(readReply('-1 0 0 0 0 5', 1, 's')).toEqual([-1, 0, 0, 0, 0, 5]);
  });

  it('refuses anything else with ERR_RL_STORE_REPLY, naming the script', () => {
    for (const reply of [[5, 1, 0, 0, 0, 1], 'OK', '', '5 1 0 0 0', '5 1 0 0 0 1 2 3', '5 1.5 0 0 0 1', '5  1 0 0 0 1', null, 42]) {
      expect(() => readReply(reply, 1, 'tollgate:apply:v2:x')).toThrow(RedisStoreError);
    }
    expect(() => readReply('OK', 1, 'tollgate:apply:v2:x')).toThrow(/ERR_RL_STORE_REPLY: expected 6 integers from tollgate:apply:v2:x/);
  });

  it('formats every field with %d, so integers past 14 digits are written in full', () => {
    expect(replyLua(2)).toContain(`fmt('${Array.from({ length: 11 }, () => '%d').join(' ')}', unpack(out, 1, 11))`);
  });
});
