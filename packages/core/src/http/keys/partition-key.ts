/**
 * @module The draft-11 `pk` (partition key) parameter. Off by default. When on, `pk` is the first
 * 9 bytes (72 bits) of HMAC-SHA256(secret, rate-limit key), so a client can tell its partitions apart
 * without learning the key (an IP address, a user id) and without anyone being able to brute-force a
 * raw IPv4 address out of an unsalted short hash. Rotating the secret changes every `pk`.
 */
import { createHmac } from 'node:crypto';
import { RateLimitConfigError } from '../../errors.js';

/** Bytes of the HMAC kept in `pk`: 9 bytes encode to 12 base64 characters with no padding. */
export const PARTITION_KEY_BYTES = 9;

/** Shortest accepted secret, in bytes. Use 32 random bytes in production. */
export const MIN_PARTITION_KEY_SECRET_BYTES = 8;

/** Options of the draft-11 `pk` parameter: the secret its per-client partition key is derived with. */
export interface PartitionKeyOptions {
  /**
   * The HMAC secret: a string (UTF-8) or bytes, at least 8 bytes; 32 random bytes recommended. Keep it
   * stable across instances so every instance sends the same `pk` for the same client.
   */
  secret: string | Uint8Array;
}

/** Returns the `pk` bytes for a rate-limit key. */
export type PartitionKeyFunction = (key: string) => Uint8Array;

/** Validates `options` (at `path`) and returns the keyed hash, or undefined when `pk` is off. */
export function createPartitionKey(options: PartitionKeyOptions | false | undefined, path: string): PartitionKeyFunction | undefined {
  if (options === undefined || options === false) return undefined;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new RateLimitConfigError('ERR_RL_INVALID_PK', path, "must be false or { secret: '<at least 8 bytes>' }", options);
  }
  for (const k of Object.keys(options)) {
    if (k !== 'secret') {
      throw new RateLimitConfigError(
        'ERR_RL_UNKNOWN_OPTION',
        `${path}.${k}`,
        'is not an option (valid: secret)',
        (options as unknown as Record<string, unknown>)[k],
      );
    }
  }
  const { secret } = options;
  const bytes = typeof secret === 'string' ? Buffer.from(secret, 'utf8') : secret instanceof Uint8Array ? Buffer.from(secret) : undefined;
  if (bytes === undefined || bytes.length < MIN_PARTITION_KEY_SECRET_BYTES) {
    throw new RateLimitConfigError(
      'ERR_RL_INVALID_PK',
      `${path}.secret`,
      `must be a string or Uint8Array of at least ${MIN_PARTITION_KEY_SECRET_BYTES} bytes (32 random bytes recommended)`,
      secret,
    );
  }
  return (key) => createHmac('sha256', bytes).update(key).digest().subarray(0, PARTITION_KEY_BYTES);
}
