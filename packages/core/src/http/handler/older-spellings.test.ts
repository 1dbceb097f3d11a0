/**
 * Options renamed so that their names explain themselves (issue 24 item 3): the current spelling and the
 * older one configure the same thing, both at once is a coded error naming the older one, and an error
 * about the value names the option as the user spelled it.
 */
import { describe, expect, it } from 'vitest';
import { parseLimiterOptions } from '../../options.js';
import { createLoadShedder } from '../../shedding/load-shedder.js';
import { configError } from '../../testing/config-error.js';
import { createPartitionKey } from '../keys/partition-key.js';
import { OLDER_SPELLINGS, parseRateLimitOptions, type RateLimitOptions } from './rate-limit-options.js';

const policies = { limit: 10, windowMs: 1000 };

/** The parsed option under each spelling, as `read` picks it from the config. */
const CASES = [
  {
    older: 'pk',
    current: 'partitionKey',
    value: { secret: 'a-secret-of-32-bytes-or-so-123456' },
    read: (c: ReturnType<typeof parse>) => c.partitionKey?.('k'),
  },
  {
    older: 'hookTimeoutMs',
    current: 'callbackTimeoutMs',
    value: 250,
    read: (c: ReturnType<typeof parse>) => c.callbackTimeoutMs,
  },
  {
    older: 'logRate',
    current: 'logLimit',
    value: { lines: 3, intervalMs: 1000 },
    read: (c: ReturnType<typeof parse>) => c.logLimit,
  },
] as const;

const parse = (extra: Record<string, unknown>) => parseRateLimitOptions({ policies, ...extra } as RateLimitOptions);

describe('older spellings of adapter options', () => {
  it.each(CASES)('$older and $current configure the same thing', ({ older, current, value, read }) => {
    const a = read(parse({ [older]: value }));
    const b = read(parse({ [current]: value }));
    expect(a).toEqual(b);
    expect(a).not.toEqual(read(parse({})));
  });

  it('builds the partition key once, at parse, under either spelling', () => {
    const secret = 'a-secret-of-32-bytes-or-so-123456';
    for (const spelling of ['pk', 'partitionKey']) {
      const hash = parse({ [spelling]: { secret } }).partitionKey;
      expect(hash).toBeTypeOf('function');
      expect(Buffer.from(hash?.('ip:203.0.113.7') ?? [])).toEqual(
        Buffer.from(createPartitionKey({ secret }, 'pk')?.('ip:203.0.113.7') ?? []),
      );
    }
    expect(parse({}).partitionKey).toBeUndefined();
    expect(parse({ partitionKey: false }).partitionKey).toBeUndefined();
  });

  it.each(CASES)('$older with $current is refused, naming the older spelling', ({ older, current, value }) => {
    const error = configError(() => parse({ [older]: value, [current]: value }));
    expect(error.code).toBe('ERR_RL_INVALID_OPTION');
    expect(error.option).toBe(older);
    expect(error.message).toContain(`older spelling of '${current}'`);
  });

  it('loadShedding and shed both install the shedder they are given', () => {
    const shedder = createLoadShedder({ maxInFlight: 3 });
    expect(parse({ loadShedding: shedder }).shedder).toBe(shedder);
    expect(parse({ shed: shedder }).shedder).toBe(shedder);
    expect(parse({ loadShedding: { maxInFlight: 2 } }).shedder?.state().limit).toBe(2);
    expect(configError(() => parse({ shed: shedder, loadShedding: shedder })).option).toBe('shed');
  });

  it('names a bad value by the spelling the user wrote', () => {
    expect(configError(() => parse({ logRate: { lines: 0 } })).option).toBe('logRate.lines');
    expect(configError(() => parse({ logLimit: { lines: 0 } })).option).toBe('logLimit.lines');
    expect(configError(() => parse({ hookTimeoutMs: -1 })).option).toBe('hookTimeoutMs');
    expect(configError(() => parse({ callbackTimeoutMs: -1 })).option).toBe('callbackTimeoutMs');
    const pkError = (spelling: string) => configError(() => parse({ headers: 'draft-7', [spelling]: { secret: 'x'.repeat(32) } }));
    expect([pkError('pk').option, pkError('partitionKey').option]).toEqual(['pk', 'partitionKey']);
    expect(pkError('partitionKey').code).toBe('ERR_RL_INVALID_PK');
    // A bad secret, and a bad shedder option, by the spelling written too (they used to say pk. and shed.).
    const secret = (spelling: string) => configError(() => parse({ [spelling]: { secret: 'short' } })).option;
    expect([secret('pk'), secret('partitionKey')]).toEqual(['pk.secret', 'partitionKey.secret']);
    const cap = (spelling: string) => configError(() => parse({ [spelling]: { maxInFlight: 0 } })).option;
    expect([cap('shed'), cap('loadShedding')]).toEqual(['shed.maxInFlight', 'loadShedding.maxInFlight']);
    expect(configError(() => parse({ loadShedding: { bogus: 1 } })).option).toBe('loadShedding.bogus');
  });

  it('lists every rename once, each current name an option the parser accepts', () => {
    const accepted = /\(valid: ([^)]*)\)/.exec(configError(() => parse({ probe: 1 })).message)?.[1]?.split(', ') ?? [];
    for (const [older, current] of Object.entries(OLDER_SPELLINGS)) {
      expect(accepted).toContain(older);
      expect(accepted).toContain(current);
    }
    expect(new Set(Object.values(OLDER_SPELLINGS)).size).toBe(Object.keys(OLDER_SPELLINGS).length);
  });
});

describe('shadowPolicies, and its older spelling shadow: { policies }', () => {
  const candidate = { name: 'next', algorithm: 'gcra', limit: 5, windowMs: 1000 } as const;

  it('compiles the same shadow policies under either spelling', () => {
    const current = parseLimiterOptions({ policies, shadowPolicies: candidate });
    const older = parseLimiterOptions({ policies, shadow: { policies: [candidate] } });
    expect(current.shadowPolicies.map((p) => p.id)).toEqual(older.shadowPolicies.map((p) => p.id));
    expect(current.shadowPolicies).toHaveLength(1);
    expect(current.shadowPolicies[0]?.shadow).toBe(true);
  });

  it('refuses both at once, and names a bad policy by the path the user wrote', () => {
    const both = configError(() => parseLimiterOptions({ policies, shadowPolicies: candidate, shadow: { policies: candidate } }));
    expect([both.code, both.option]).toEqual(['ERR_RL_INVALID_OPTION', 'shadow']);
    const bad = { ...candidate, limit: 0 };
    expect(configError(() => parseLimiterOptions({ policies, shadowPolicies: [bad] })).option).toMatch(/^shadowPolicies\[0\]/);
    expect(configError(() => parseLimiterOptions({ policies, shadow: { policies: [bad] } })).option).toMatch(/^shadow\.policies\[0\]/);
  });

  it('scales the shadow policies for the local fallback under either spelling', () => {
    const current = parseLimiterOptions({ policies, shadowPolicies: candidate, localShare: 0.5 });
    const older = parseLimiterOptions({ policies, shadow: { policies: candidate }, localShare: 0.5 });
    expect(current.localPolicies.map((p) => p.limit)).toEqual(older.localPolicies.map((p) => p.limit));
    expect(current.localPolicies.map((p) => p.limit)).toEqual([5, 2]);
  });
});
