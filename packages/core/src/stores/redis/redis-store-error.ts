/**
 * @module The error RedisStore rejects with when it cannot or will not ask Redis: the client is not
 * ready (the command would wait in ioredis' offline queue), or Redis answered something the script
 * never returns. Errors from Redis itself (timeouts, connection resets, script errors) pass through
 * unchanged. The limiter's `onStoreError` decides what a check answers either way.
 */

import { seeDocs } from '../../errors.js';

export type RedisStoreErrorCode = 'ERR_RL_STORE_NOT_READY' | 'ERR_RL_STORE_REPLY';

export class RedisStoreError extends Error {
  readonly code: RedisStoreErrorCode;

  constructor(code: RedisStoreErrorCode, message: string) {
    super(`${code}: ${message}. ${seeDocs(code)}`);
    this.name = 'RedisStoreError';
    this.code = code;
  }
}
