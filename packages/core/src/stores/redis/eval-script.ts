/**
 * @module Runs a script by SHA: EVALSHA, and only when Redis answers NOSCRIPT (its script cache is empty
 * after a restart, a failover, on a new cluster node, or after SCRIPT FLUSH) the same call once more as
 * EVAL, which also caches the script on that node. NOSCRIPT means the script did not run, so sending it
 * again cannot charge twice. Every other error is rethrown as is: retrying a timeout or a dropped
 * connection would double the load on a struggling server and could charge a request twice.
 */
import type { RedisClientLike } from './redis-client.js';
import type { LuaScript } from './scripts.js';

/** True for Redis' answer to EVALSHA of a script it does not hold. */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * Runs `script` with `numKeys` keys followed by arguments (`args`); `onReload` is told each time the
 * script had to be sent in full. On a Cluster client the keys route both calls to the same node.
 */
export function evalScript(
  client: RedisClientLike,
  script: LuaScript,
  numKeys: number,
  args: readonly string[],
  onReload?: () => void,
): Promise<unknown> {
  return client.evalsha(script.sha, numKeys, ...args).then(undefined, (error: unknown) => {
    if (!isNoScript(error)) throw error;
    onReload?.();
    return client.eval(script.lua, numKeys, ...args);
  });
}
