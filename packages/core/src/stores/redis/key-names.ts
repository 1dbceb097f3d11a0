/**
 * @module Redis key names: `<prefix>:{<key>}:<policy>`. The braces make the limiter key the hash tag,
 * so every key one request touches lives in one Redis Cluster slot and one script may read them all.
 * A key that is long, empty, or contains a brace (which would end or empty the hash tag) is replaced by
 * its SHA-256, marked with `#` after the tag so a digest and a literal key can never share a name.
 */
import { createHash } from 'node:crypto';
import type { CompiledPolicy } from '../../policy.js';

/** Keys up to this many UTF-16 units are used as they are (when brace-free); longer ones are hashed. */
export const MAX_LITERAL_KEY = 128;

/**
 * The hash tag and marker of `key`: `{key}` for short brace-free keys, else `{<digest>}#` (128 bits of
 * SHA-256, base64url). Redis hashes the text between the first `{` and the next `}`, so a key with a
 * `}` would cut the tag short and an empty one would hash the whole name: both are hashed instead.
 */
export function keyTag(key: string): string {
  if (key.length > 0 && key.length <= MAX_LITERAL_KEY && !key.includes('{') && !key.includes('}')) return `{${key}}`;
  return `{${createHash('sha256').update(key).digest('base64url').slice(0, 22)}}#`;
}

/**
 * The part of a key name that names the policy: its storage identity (`CompiledPolicy.id`: name,
 * algorithm and every parameter that changes the meaning of the state), so two limiters share state
 * exactly when the memory store would make them share it. `name:algorithm:params` for an enforced
 * policy, `name:algorithm:params:shadow` for a shadow one: the role goes last, where the grammar is
 * fixed (params never hold a `:`), because a name may itself contain `:`.
 */
export function policySuffix(p: CompiledPolicy): string {
  const role = p.shadow ? 'shadow:' : 'enforce:';
  if (!p.id.startsWith(role)) throw new Error(`policySuffix: unexpected policy id '${p.id}'`);
  const rest = p.id.slice(role.length);
  return p.shadow ? `${rest}:shadow` : rest;
}

/** The Redis key holding the state of `policy` for `key`. */
export function keyName(prefix: string, tag: string, suffix: string): string {
  return `${prefix}:${tag}:${suffix}`;
}
