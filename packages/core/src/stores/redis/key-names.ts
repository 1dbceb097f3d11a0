/**
 * @module Redis key names: `<prefix>:v1:{<key>}:<policy>`. `v1` is the layout of the state the scripts
 * keep (scripts.ts): a future layout takes `v2`, so a script never reads state written in another
 * format (old keys simply expire). The braces make the limiter key the hash tag,
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

/** Short algorithm codes for key names. */
const CODES: Readonly<Record<CompiledPolicy['algorithm'], string>> = {
  'fixed-window': 'fw',
  'sliding-window': 'sw',
  'sliding-log': 'sl',
  'token-bucket': 'tb',
  gcra: 'gc',
  'leaky-bucket': 'lb',
  concurrency: 'cc',
};

/**
 * The part of a key name that names the policy: `name:code:windowMs` for the window algorithms,
 * `name:code:windowMs` for every algorithm, `/first` for windows anchored at the first request, and `:s`
 * for a shadow policy (`default:gc:60000`, `login:fw:5/900000/first:s`). It carries everything the
 * policy's storage identity (`CompiledPolicy.id`) carries, so two limiters share state exactly when the
 * memory store would make them share it; key-names.test.ts checks that suffixes and ids agree. Short,
 * because the key name is most of what a key costs in Redis memory. The role goes last, where the
 * grammar is fixed (a name may itself contain `:`).
 */
export function policySuffix(p: CompiledPolicy): string {
  // Window algorithms count milli-units, whatever the limit, and bucket state records the limit and
  // burst it was written under (gcra.ts, token-bucket.ts): state carries over a change of limit (or of
  // plan), so neither limit nor burst is part of the name (README: what carries over).
  let params = `${p.windowMs}`;
  if (p.anchorFirst) params += '/first';
  return `${p.name}:${CODES[p.algorithm]}:${params}${p.shadow ? ':s' : ''}`;
}

/** The layout of the stored state; bump it (`v2`) whenever a script would read old state wrongly. */
export const KEY_LAYOUT = 'v1';

/** The Redis key holding the state of `policy` (its `suffix`) for the limiter key whose tag is `tag`. */
export function keyName(prefix: string, tag: string, suffix: string): string {
  return `${prefix}:${KEY_LAYOUT}:${tag}:${suffix}`;
}
