/**
 * @module A generated Lua script as RedisStore runs it: its name, its text and the SHA1 EVALSHA names it by.
 */
import { createHash } from 'node:crypto';

/** A Lua script and the SHA1 that EVALSHA names it by (computed from the text, never pinned by hand). */
export interface LuaScript {
  /** `tollgate:apply:v2:<plan digest>`: bump the version whenever the state layout changes meaning. */
  readonly name: string;
  readonly lua: string;
  readonly sha: string;
}

/** A script named `name` with text `text`, its SHA1 computed from the text (never pinned by hand). */
export function defineScript(name: string, text: string): LuaScript {
  return Object.freeze({ name, lua: text, sha: createHash('sha1').update(text).digest('hex') });
}
