/**
 * @module The error RedisStore rejects with when it cannot or will not ask Redis: the client is not
 * ready (the command would wait in ioredis' offline queue), or Redis answered something the script
 * never returns. Errors from Redis itself (timeouts, connection resets, script errors) pass through
 * unchanged. The limiter's `onStoreError` decides what a check answers either way; `redisErrorScope`
 * says whether an error belongs to one key or to the node (the limiter's health counts only the latter).
 */

import { seeDocs } from '../../errors.js';

/** The codes a `RedisStoreError` carries. */
export type RedisStoreErrorCode = 'ERR_RL_STORE_NOT_READY' | 'ERR_RL_STORE_REPLY';

/** An error of the Redis store (not ready, an unreadable reply), with a stable `code`; the limiter answers it by the failure mode. */
export class RedisStoreError extends Error {
  readonly code: RedisStoreErrorCode;

  constructor(code: RedisStoreErrorCode, message: string) {
    super(`${code}: ${message}. ${seeDocs(code)}`);
    this.name = 'RedisStoreError';
    this.code = code;
  }
}

/**
 * Redis error replies that say the node cannot serve anyone now, whatever the key: out of memory under
 * `noeviction` (every write fails until memory frees), loading its dataset, busy with a long script, a
 * replica or a Cluster that cannot take writes, persistence failing, access refused.
 */
const NODE_REPLIES = /^(OOM|LOADING|BUSY|MASTERDOWN|CLUSTERDOWN|READONLY|NOREPLICAS|MISCONF|NOAUTH|NOPERM|WRONGPASS)\b/;

/**
 * ioredis Cluster's error once it has sent a call again `maxRedirections` times, the last answered
 * TRYAGAIN: the call's slot is being moved. Not when the last was MOVED or ASK: those also come while a
 * restarted or failed-over master's slots settle, which is the node's event (its restore is told by the
 * breaker), and a closed connection stays the node's too.
 */
const IOREDIS_REDIRECTED = /^Too many Cluster redirections\. Last error: \w*Error: TRYAGAIN\b/;

/**
 * `'key'` for errors about one key's state: `WRONGTYPE` (the key's Redis name holds another type), a
 * script error raised on a foreign or corrupt value (`ERR user_script:…`, `… on @user_script:…`),
 * `TRYAGAIN` (a Cluster slot being migrated holds some of the decision's keys and not the others: that
 * slot's keys only, until the move ends; and ioredis' error after sending such a call again too often, the
 * last answered TRYAGAIN; counted against the node, one key caught mid-move degraded 90 to
 * 99 % of the other keys on its master), and `ERR_RL_STORE_REPLY` (the script answered oddly for that key). The node answered each of them, so
 * they never count against its health. Everything else is `'node'`: connection errors, the client not
 * ready, and the `NODE_REPLIES`.
 */
export function redisErrorScope(error: unknown): 'key' | 'node' {
  if (!(error instanceof Error)) return 'node';
  if ((error as { code?: unknown }).code === 'ERR_RL_STORE_REPLY') return 'key';
  const message = error.message;
  if (NODE_REPLIES.test(message)) return 'node';
  if (message.startsWith('WRONGTYPE') || message.startsWith('TRYAGAIN') || IOREDIS_REDIRECTED.test(message)) return 'key';
  if (message.startsWith('ERR') && message.includes('user_script')) return 'key';
  return 'node';
}
