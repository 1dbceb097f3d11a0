/**
 * @module draft-ietf-httpapi-ratelimit-headers-11 fields, serialized with `structured-headers` (never
 * by hand, so policy names are always escaped and every value is range-checked). `RateLimit-Policy`
 * lists every enforced policy: `"name";q=limit;w=seconds`, plus `qu` when the unit is not requests.
 * `RateLimit` lists `"name";r=remaining;t=seconds` per policy; on a 429 only the exhausted ones.
 *
 * What the numbers mean, per algorithm:
 * - `q` is `limit`, the sustained quota per `w`. For token-bucket, gcra and leaky-bucket with
 *   `burst > limit`, `r` can exceed `q`: a full bucket holds `burst`; `r` is what may be used now.
 * - `t` (allowed) is the time until the policy is back to full quota if the client sends nothing more:
 *   the window end for fixed-window (exactly the draft's "effective window"), the time until the log or
 *   the weighted previous window has drained for sliding-log and sliding-window, and the time until
 *   the bucket is full for the bucket family. A client never has more than its full quota after `t`.
 * - `t` (429) is the policy's wait until this same request would be admitted; `Retry-After` is the
 *   largest of them.
 *
 * Speed: the library's `serializeList` costs about a microsecond per call, so everything constant is
 * serialized once per middleware: the whole `RateLimit-Policy` value (without `pk`) and, per policy,
 * the serialized name and parameter keys. Per request only the integers go through the library
 * (`serializeInteger`, which range-checks them); the pieces are joined by the List grammar of RFC 9651
 * (`;` before each parameter, `, ` between members). A property test proves the output equal to
 * `serializeList` on the same items.
 */
import { type Item, serializeByteSequence, serializeInteger, serializeKey, serializeList, serializeString } from 'structured-headers';
import type { LimiterKey } from '../../limiter/limiter.js';
import { normalizeKey } from '../../limiter/target.js';
import type { Decision, PolicyDescription } from '../../types.js';
import type { PartitionKeyFunction } from '../keys/partition-key.js';
import { type HeaderPair, type HeaderWriter, isExhausted, remainingUnits, resetSeconds, windowSeconds } from './header-values.js';

export const RATELIMIT_POLICY = 'RateLimit-Policy';
export const RATELIMIT = 'RateLimit';

const R = `;${serializeKey('r')}=`;
const T = `;${serializeKey('t')}=`;
const PK = `;${serializeKey('pk')}=`;
const MEMBER_SEPARATOR = ', ';

/** One `RateLimit` member: `"name";r=R;t=T[;pk=:…:]`. */
export function serviceLimitItem(serializedName: string, r: number, t: number, pk: string): string {
  return serializedName + R + serializeInteger(r) + T + serializeInteger(t) + pk;
}

export function createDraft11Writer(policies: readonly PolicyDescription[], partitionKey: PartitionKeyFunction | undefined): HeaderWriter {
  const policyItems: Item[] = policies.map((p) => {
    const params = new Map<string, number | string>([['q', p.limit]]);
    if (p.unit !== 'requests') params.set('qu', p.unit);
    params.set('w', windowSeconds(p.windowMs));
    return [p.name, params];
  });
  const policyField = serializeList(policyItems);
  // The same pair on every response without a partition key: pairs are read-only.
  const policyPair: HeaderPair = [RATELIMIT_POLICY, policyField];
  const names = policies.map((p) => serializeString(p.name));
  const single = names.length === 1 ? (names[0] as string) : undefined;

  return {
    write(decision: Decision, exhausted: boolean, _clock: () => number, into: HeaderPair[], target?: LimiterKey): void {
      const bytes = partitionKey === undefined ? undefined : partitionKeys(partitionKey, policies, target, decision.key);
      if (bytes === undefined) into.push(policyPair);
      else
        into.push([RATELIMIT_POLICY, serializeList(policyItems.map(([n, m], i) => [n, new Map([...m, ['pk', bytes[i] as Uint8Array]])]))]);
      if (single !== undefined) {
        // One policy: the decision's own numbers are that policy's, and reading them allocates nothing.
        const waiting = exhausted && decision.reason === 'limited';
        const t = waiting ? Math.max(1, Math.ceil(decision.retryAfterMs / 1000)) : Math.ceil(decision.resetMs / 1000);
        into.push([RATELIMIT, serviceLimitItem(single, Math.floor(decision.remaining), t, pkParam(bytes, 0))]);
        return;
      }
      let field = '';
      const results = decision.policies;
      for (let i = 0; i < results.length; i++) {
        const result = results[i];
        const name = names[i];
        if (result === undefined || name === undefined) continue;
        if (exhausted && !isExhausted(result)) continue;
        const item = serviceLimitItem(name, remainingUnits(result), resetSeconds(result, exhausted), pkParam(bytes, i));
        field = field === '' ? item : field + MEMBER_SEPARATOR + item;
      }
      if (field !== '') into.push([RATELIMIT, field]);
    },
  };
}

/** `;pk=:...:` of policy `i`, or nothing without partition keys. */
function pkParam(bytes: readonly Uint8Array[] | undefined, i: number): string {
  return bytes === undefined ? '' : PK + serializeByteSequence(bytes[i] as Uint8Array);
}

/**
 * Each policy's partition key, of the key it was decided for, normalised as the limiter stores it: with a
 * key per policy, that policy's own (a policy the object names no key for cannot be decided, and takes
 * `key`); with one key, `key` (the decision's), hashed once for all of them.
 */
function partitionKeys(
  partitionKey: PartitionKeyFunction,
  policies: readonly PolicyDescription[],
  target: LimiterKey | undefined,
  key: string,
): Uint8Array[] {
  if (target === undefined || typeof target === 'string') return new Array<Uint8Array>(policies.length).fill(partitionKey(key));
  return policies.map((p) => {
    const own = Object.hasOwn(target, p.name) ? target[p.name] : undefined;
    return partitionKey(typeof own === 'string' ? normalizeKey(own) : key);
  });
}
