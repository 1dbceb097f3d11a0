/**
 * @module Redis key names: `<prefix>:v2:{<key>}:<policy>`, e.g. `tg:v2:{ip:10.1.2.3}:gc1d`, and for a limiter
 * with a `name`, `<prefix>:v2:<name>:{<key>}:<policy>` (`tg:v2:login:{ip:10.1.2.3}:fw15m`). `v2` is the
 * layout of the state the scripts keep (scripts/plan-script.ts): a future layout takes `v3`, so a script never reads
 * state written in another format (old keys simply expire). Short, because the name is most of what a key
 * costs in Redis: up to 30 characters it takes Redis' smallest allocation for a key of that kind, and
 * `tg:v2:{ip:10.1.255.255}:gc1d` is 28. The braces make the limiter key the hash tag, so the keys of a
 * check for one key (every policy of its plan) live in one Redis Cluster slot and one script may read
 * them all. A check with a key per policy (`{ ip, user }`) may span slots: RedisStore then runs one
 * script per slot (cluster-split.ts).
 * A key that is long, empty, or contains a brace (which would end or empty the hash tag) is replaced by
 * its SHA-256, marked with `#` after the tag so a digest and a literal key can never share a name.
 */
import { createHash } from 'node:crypto';
import type { CompiledPolicy } from '../../algorithms/kernel.js';

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

/** A window in the largest unit that divides it exactly: `1d`, `2h`, `15m`, `90s`, or plain ms (`333`). */
export function compactWindow(ms: number): string {
  for (const [unit, size] of WINDOW_UNITS) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}`;
}

const WINDOW_UNITS: readonly (readonly [string, number])[] = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1000],
];

/**
 * The part of a key name that names the policy: the name and a colon (none for the name `default`), the
 * algorithm's code and the window (`gc1d`), `/first` for windows anchored at the first request, and `:s`
 * for a shadow policy (`gc1m`, `login:fw15m/first:s`). It carries everything the policy's storage
 * identity (`CompiledPolicy.id`) carries, so two limiters share state exactly when the memory store would
 * make them share it; key-names.test.ts checks that suffixes and ids agree. The grammar reads from the
 * end: `:s` only ever ends a shadow policy's suffix, the code and window (no colon) come before it, and
 * whatever precedes them is the name (which may itself contain `:`).
 */
export function policySuffix(p: CompiledPolicy): string {
  // Window algorithms count milli-units, whatever the limit, and bucket state records the limit and
  // burst it was written under (gcra.ts, token-bucket.ts): state carries over a change of limit (or of
  // plan), so neither limit nor burst is part of the name (README: what carries over).
  const id = `${CODES[p.algorithm]}${compactWindow(p.windowMs)}${p.anchorFirst ? '/first' : ''}`;
  return `${p.name === 'default' ? '' : `${p.name}:`}${id}${p.shadow ? ':s' : ''}`;
}

/** The layout of the stored state; bump it (`v3`) whenever a script would read old state wrongly. */
export const KEY_LAYOUT = 'v2';

/**
 * Everything before the hash tag: `<prefix>:v2:` for a limiter without a name (the names of earlier
 * versions, so existing state is read on), `<prefix>:v2:<name>:` for a named one (`createLimiter({ name })`).
 * A limiter name has no colon or brace (options.ts), so it can neither start the tag nor pass for a prefix.
 */
export function keyHead(prefix: string, limiter: string | undefined): string {
  return limiter === undefined ? `${prefix}:${KEY_LAYOUT}:` : `${prefix}:${KEY_LAYOUT}:${limiter}:`;
}

/**
 * The mark of a limiter's state on a Redis (RedisStore.markAlive): `<head>~alive`, no expiry. A key of
 * state has a hash tag right after the head, which starts with `{`, so the two never meet.
 */
export function markName(prefix: string, limiter: string | undefined): string {
  return `${keyHead(prefix, limiter)}~alive`;
}

/**
 * The mark of a limiter on one master of a Redis Cluster (stores/redis/node-marks.ts): `<head>~alive{<n>}`,
 * its hash tag `n` picked so that the key's slot is one that master serves. Never the single-node mark,
 * never a key of state (whose tag follows the head at once).
 */
export function nodeMarkName(prefix: string, limiter: string | undefined, n: number): string {
  return `${markName(prefix, limiter)}{${n}}`;
}

/**
 * The ledger of what was charged again to one key of state after a loss (scripts/restore-ledger.ts):
 * `<head>~restored{<key>}:<policy>`, in the state's slot. Never a key of state (whose tag follows the head
 * at once) nor a mark (`~alive`).
 */
export function restoredName(head: string, tag: string, suffix: string): string {
  return `${head}~restored${tag}:${suffix}`;
}

/**
 * Beside a ledger (`restoredName`), what it held before each raise, by the raise's id
 * (scripts/restore-ledger.ts): `<head>~raises{<key>}:<policy>`, in the same slot. Never a key of state, a
 * mark or a ledger.
 */
export function raisesName(head: string, tag: string, suffix: string): string {
  return `${head}~raises${tag}:${suffix}`;
}

/** The Redis key holding the state of `policy` (its `suffix`, its `head`) for the limiter key whose tag is `tag`. */
export function keyName(head: string, tag: string, suffix: string): string {
  return `${head}${tag}:${suffix}`;
}
