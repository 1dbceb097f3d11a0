/**
 * @module Runs a script by SHA. EVALSHA first; when Redis answers NOSCRIPT (its script cache is empty
 * after a restart, a failover, on a new cluster node, or after SCRIPT FLUSH), one SCRIPT LOAD on that
 * node, shared by every call that meets NOSCRIPT there while it is on its way, then EVALSHA again: a
 * fresh server with 256 calls in flight gets the script once, not 256 times. NOSCRIPT means the script
 * did not run, so sending the call again cannot charge twice. Should the second EVALSHA meet NOSCRIPT
 * too (the slot moved to a node without the script, or its cache was flushed, while the script loaded),
 * or should a Cluster client not say which node serves the key, the call goes once more as EVAL, which
 * carries the script itself. Every other error is rethrown as is: retrying a timeout or a dropped
 * connection would double the load on a struggling server and could charge a request twice.
 */
import { keySlot } from './cluster-slot.js';
import type { RedisClientLike, ScriptHost } from './redis-client.js';
import type { LuaScript } from './scripts.js';

/** True for Redis' answer to EVALSHA of a script it does not hold. */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/**
 * Where SCRIPT LOAD must go for a call on `key`: the client itself, or on a Cluster the client of the
 * master that serves the key's slot (undefined when the client's slot map does not name it).
 */
function scriptHost(client: RedisClientLike, key: string): ScriptHost | undefined {
  if (client.isCluster !== true) return client;
  const address = client.slots?.[keySlot(key)]?.[0];
  if (address === undefined) return undefined;
  return client.nodes?.('master').find((node) => `${node.options.host}:${node.options.port}` === address);
}

/** Runs scripts on one client, loading each at most once at a time per node. */
export class ScriptRunner {
  /** Times the script was sent in full: each SCRIPT LOAD, and each EVAL. */
  sent = 0;
  /** The SCRIPT LOADs on their way, by node and SHA. */
  private readonly loading = new WeakMap<ScriptHost, Map<string, Promise<unknown>>>();

  constructor(private readonly client: RedisClientLike) {}

  /** Runs `script` with `numKeys` keys (`args[0 .. numKeys)`) followed by its arguments. */
  run(script: LuaScript, numKeys: number, args: readonly string[]): Promise<unknown> {
    const client = this.client;
    return client.evalsha(script.sha, numKeys, ...args).then(undefined, (error: unknown) => {
      if (!isNoScript(error)) throw error;
      const host = scriptHost(client, args[0] as string);
      if (host === undefined) return this.evalInFull(script, numKeys, args);
      return this.load(host, script)
        .then(() => client.evalsha(script.sha, numKeys, ...args))
        .then(undefined, (again: unknown) => {
          if (!isNoScript(again)) throw again;
          return this.evalInFull(script, numKeys, args);
        });
    });
  }

  /** SCRIPT LOAD of `script` on `host`, or the one already on its way there. */
  private load(host: ScriptHost, script: LuaScript): Promise<unknown> {
    let pending = this.loading.get(host);
    if (pending === undefined) {
      pending = new Map();
      this.loading.set(host, pending);
    }
    const onItsWay = pending.get(script.sha);
    if (onItsWay !== undefined) return onItsWay;
    this.sent += 1;
    const loads = pending;
    const loaded = host.script('LOAD', script.lua).finally(() => loads.delete(script.sha));
    loads.set(script.sha, loaded);
    return loaded;
  }

  private evalInFull(script: LuaScript, numKeys: number, args: readonly string[]): Promise<unknown> {
    this.sent += 1;
    return this.client.eval(script.lua, numKeys, ...args);
  }
}
