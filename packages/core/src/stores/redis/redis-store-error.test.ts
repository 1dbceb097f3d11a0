import { describe, expect, it } from 'vitest';
import { RedisStoreError, redisErrorScope } from './redis-store-error.js';

/** An error as ioredis raises a Redis error reply: class ReplyError, the reply as the message. */
function reply(message: string): Error {
  const e = new Error(message);
  e.name = 'ReplyError';
  return e;
}

describe('redisErrorScope: whose fault a Redis error is', () => {
  // The messages below are Redis 7.0's own, captured from redis-server.
  it.each([
    ['WRONGTYPE Operation against a key holding the wrong kind of value script: 9cd9f655, on @user_script:1.'],
    ['ERR value is not an integer or out of range script: 2bab3b66, on @user_script:1.'],
    ['ERR user_script:1: attempt to perform arithmetic on a nil value script: bb5c1bb1, on @user_script:1.'],
    ['WRONGTYPE Operation against a key holding the wrong kind of value'],
    // A slot mid-migration, some of the decision's keys moved: that slot's keys, not the master's others.
    ['TRYAGAIN Multiple keys request during rehashing of slot'],
    // ioredis Cluster, having sent it again `maxRedirections` times.
    ['Too many Cluster redirections. Last error: ReplyError: TRYAGAIN Multiple keys request during rehashing of slot'],
  ])("'%s' belongs to one key", (message) => {
    expect(redisErrorScope(reply(message))).toBe('key');
  });

  it('a reply the script never returns belongs to one key', () => {
    expect(redisErrorScope(new RedisStoreError('ERR_RL_STORE_REPLY', 'expected 6 integers'))).toBe('key');
  });

  it.each([
    ["OOM command not allowed when used memory > 'maxmemory'. script: 0f0cd1f1, on @user_script:1."],
    ['LOADING Redis is loading the dataset in memory'],
    ['BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.'],
    ["READONLY You can't write against a read only replica."],
    ['CLUSTERDOWN The cluster is down'],
    ['MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to no'],
    ['NOPERM this user has no permissions to run the evalsha command'],
    ['ERR max number of clients reached'],
    ['Connection is closed.'],
    ['Too many Cluster redirections. Last error: Error: Connection is closed.'],
    // A restarted master's slots settling: the node's event.
    ['Too many Cluster redirections. Last error: ReplyError: MOVED 3341 127.0.0.1:45633'],
  ])("'%s' belongs to the node", (message) => {
    expect(redisErrorScope(reply(message))).toBe('node');
  });

  it('connection errors, the client not ready, and things that are not errors belong to the node', () => {
    expect(redisErrorScope(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' }))).toBe('node');
    expect(redisErrorScope(new RedisStoreError('ERR_RL_STORE_NOT_READY', "the Redis client is 'reconnecting'"))).toBe('node');
    expect(redisErrorScope('WRONGTYPE')).toBe('node');
    expect(redisErrorScope(undefined)).toBe('node');
  });
});
