/**
 * @module Runs a script by SHA. EVALSHA first; when Redis answers NOSCRIPT (its script cache is empty
 * after a restart, a failover, on a new cluster node, or after SCRIPT FLUSH), one SCRIPT LOAD on that
 * node, shared by every call sent before it that meets NOSCRIPT there, then EVALSHA again: a
 * fresh server with 256 calls in flight gets the script once, not 256 times. NOSCRIPT means the script
 * did not run, so sending the call again cannot charge twice. Should the second EVALSHA meet NOSCRIPT
 * too (the slot moved to a node without the script, or its cache was flushed, while the script loaded),
 * or should a Cluster client not say which node serves the key, the call goes once more as EVAL, which
 * carries the script itself. Every other error is rethrown as is: retrying a timeout or a dropped
 * connection would double the load on a struggling server and could charge a request twice.
 */
import type { StoreClient } from '../clients/store-client.js';
import type { LuaScript } from './lua-script.js';

/** True for Redis' answer to EVALSHA of a script it does not hold. */
export function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/** Runs scripts on one client, loading each at most once at a time per node. */
export class ScriptRunner {
  /** Times the script was sent in full: each SCRIPT LOAD, and each EVAL. */
  sent = 0;
  /** Calls sent so far: a call's number says whether a SCRIPT LOAD started after it was sent. */
  private calls = 0;
  /** Calls sent and not answered yet (the first EVALSHA of each, reloads aside). */
  private pending = 0;
  /** The latest SCRIPT LOAD by node and SHA: the call number when it started, and its promise. */
  private readonly loads = new Map<string, { readonly after: number; readonly done: Promise<unknown> }>();

  constructor(private readonly client: StoreClient) {}

  /**
   * Runs `script` with `numKeys` keys (`args[0 .. numKeys)`) followed by its arguments, and resolves to
   * `check(reply)`: one `then` on the client's promise, so a call costs no promise or tick of its own.
   */
  run<T>(script: LuaScript, numKeys: number, args: readonly string[], check: (reply: unknown) => T): Promise<T> {
    const call = ++this.calls;
    this.pending += 1;
    return this.client.evalsha(script.sha, numKeys, args, this.pending > 1).then(
      (reply) => {
        this.pending -= 1;
        return check(reply);
      },
      (error: unknown) => {
        this.pending -= 1;
        return this.reload(error, call, script, numKeys, args).then(check);
      },
    );
  }

  /** After EVALSHA `call` failed: on NOSCRIPT, load the script where the key lives and send the call once more. */
  private reload(error: unknown, call: number, script: LuaScript, numKeys: number, args: readonly string[]): Promise<unknown> {
    if (!isNoScript(error)) throw error;
    const client = this.client;
    const host = client.scriptHost(args[0] as string);
    if (host === undefined) return this.evalInFull(script, numKeys, args);
    return this.load(host.id, call, script, host.load)
      .then(() => client.evalsha(script.sha, numKeys, args))
      .then(undefined, (again: unknown) => {
        if (!isNoScript(again)) throw again;
        return this.evalInFull(script, numKeys, args);
      });
  }

  /**
   * SCRIPT LOAD of `script` on node `id` for a call that met NOSCRIPT there. A load that started after
   * the call was sent (on its way, or done) already answers it: the call met the cache as it was before
   * that load. Only a call sent after the latest load started, which still met NOSCRIPT, loads again
   * (the cache was emptied once more).
   */
  private load(id: string, call: number, script: LuaScript, send: (lua: string) => Promise<unknown>): Promise<unknown> {
    const slot = `${id} ${script.sha}`;
    const latest = this.loads.get(slot);
    if (latest !== undefined && latest.after >= call) return latest.done;
    this.sent += 1;
    const done = send(script.lua);
    this.loads.set(slot, { after: this.calls, done });
    return done;
  }

  private evalInFull(script: LuaScript, numKeys: number, args: readonly string[]): Promise<unknown> {
    this.sent += 1;
    return this.client.evalScript(script.lua, numKeys, args);
  }
}
