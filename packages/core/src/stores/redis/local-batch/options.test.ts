import { describe, expect, it } from 'vitest';
import { RateLimitConfigError } from '../../../errors.js';
import { parseLocalBatch } from './options.js';

describe('localBatch option', () => {
  it('is off by default and with false; true takes the defaults; an object overrides them', () => {
    expect(parseLocalBatch(undefined)).toBe(false);
    expect(parseLocalBatch(false)).toBe(false);
    expect(parseLocalBatch(true)).toEqual({ minRate: 50, holdMs: 50, maxShare: 0.1, maxKeys: 10_000 });
    expect(parseLocalBatch({ minRate: 200, maxShare: 0.5 })).toEqual({ minRate: 200, holdMs: 50, maxShare: 0.5, maxKeys: 10_000 });
  });

  it.each([
    [{ minRate: 0 }, 'localBatch.minRate'],
    [{ holdMs: 1.5 }, 'localBatch.holdMs'],
    [{ holdMs: 2 ** 31 }, 'localBatch.holdMs'],
    [{ holdMs: 1e12 }, 'localBatch.holdMs'],
    [{ maxShare: 0 }, 'localBatch.maxShare'],
    [{ maxShare: 1.5 }, 'localBatch.maxShare'],
    [{ maxKeys: -1 }, 'localBatch.maxKeys'],
    ['yes', 'localBatch'],
  ] as const)('refuses %j, naming %s', (input, path) => {
    let error: unknown;
    try {
      parseLocalBatch(input as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(RateLimitConfigError);
    expect((error as RateLimitConfigError).code).toBe('ERR_RL_INVALID_OPTION');
    expect((error as Error).message).toContain(path);
  });

  it('refuses an unknown key', () => {
    expect(() => parseLocalBatch({ batchSize: 10 } as never)).toThrow(/ERR_RL_UNKNOWN_OPTION|batchSize/);
  });
});
