import { describe, expect, it } from 'vitest';
import { RateLimitConfigError } from '../../errors.js';
import { createPartitionKey } from './partition-key.js';

describe('createPartitionKey', () => {
  it('is off unless configured', () => {
    expect(createPartitionKey(undefined, 'pk')).toBeUndefined();
    expect(createPartitionKey(false, 'pk')).toBeUndefined();
  });

  it('is the first 9 bytes of HMAC-SHA256(secret, key) (http-spec.md vector F)', () => {
    const pk = createPartitionKey({ secret: 'example-secret' }, 'pk');
    expect(Buffer.from(pk?.('ip:203.0.113.7') ?? []).toString('base64')).toBe('YzZhlaR+lA/r');
    expect(
      Buffer.from(createPartitionKey({ secret: new TextEncoder().encode('example-secret') }, 'pk')?.('ip:203.0.113.7') ?? []),
    ).toHaveLength(9);
  });

  it.each([[{ secret: 'short' }], [{ secret: 42 }], [{}], ['secret'], [{ secret: 'long-enough', salt: 1 }]])('rejects %o', (bad) => {
    expect(() => createPartitionKey(bad as never, 'pk')).toThrow(RateLimitConfigError);
  });
});
