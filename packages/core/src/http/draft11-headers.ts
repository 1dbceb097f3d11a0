/**
 * @module draft-ietf-httpapi-ratelimit-headers-11 fields, serialized with `structured-headers` (never
 * by string concatenation, so policy names are always escaped). `RateLimit-Policy` lists every
 * enforced policy: `"name";q=limit;w=seconds`, plus `qu` when the unit is not requests. `RateLimit`
 * lists `"name";r=remaining;t=seconds` per policy; on a 429 only the exhausted ones.
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
 * Everything constant is built once per middleware: the whole `RateLimit-Policy` value (without `pk`)
 * and one item per policy whose parameters are overwritten per request.
 */
import { type Item, serializeList } from 'structured-headers';
import type { PolicyDescription } from '../create-limiter.js';
import type { Decision } from '../types.js';
import { type HeaderPair, type HeaderWriter, isExhausted, remainingUnits, resetSeconds, windowSeconds } from './header-values.js';
import type { PartitionKeyFunction } from './partition-key.js';

export const RATELIMIT_POLICY = 'RateLimit-Policy';
export const RATELIMIT = 'RateLimit';

export function createDraft11Writer(policies: readonly PolicyDescription[], partitionKey: PartitionKeyFunction | undefined): HeaderWriter {
  const policyItems: Item[] = policies.map((p) => {
    const params = new Map<string, number | string>([['q', p.limit]]);
    if (p.unit !== 'requests') params.set('qu', p.unit);
    params.set('w', windowSeconds(p.windowMs));
    return [p.name, params];
  });
  const policyField = serializeList(policyItems);
  // One reusable item per policy; serializeList is synchronous, so overwriting r and t per request is safe.
  const limitItems: Item[] = policies.map((p) => [p.name, new Map<string, number | ArrayBuffer | Uint8Array>()]);
  const selected: Item[] = [];

  return {
    write(decision: Decision, exhausted: boolean, _now: number, into: HeaderPair[]): void {
      const pk = partitionKey?.(decision.key);
      into.push([
        RATELIMIT_POLICY,
        pk === undefined ? policyField : serializeList(policyItems.map(([n, m]) => [n, new Map([...m, ['pk', pk]])])),
      ]);
      if (limitItems.length === 1) {
        // One policy: the decision's own numbers are that policy's, and reading them allocates nothing.
        const params = (limitItems[0] as Item)[1];
        const waiting = exhausted && decision.reason === 'limited';
        params.set('r', Math.floor(decision.remaining));
        params.set('t', waiting ? Math.max(1, Math.ceil(decision.retryAfterMs / 1000)) : Math.ceil(decision.resetMs / 1000));
        if (pk === undefined) params.delete('pk');
        else params.set('pk', pk);
        into.push([RATELIMIT, serializeList(limitItems)]);
        return;
      }
      selected.length = 0;
      const results = decision.policies;
      for (let i = 0; i < results.length; i++) {
        const result = results[i];
        const item = limitItems[i];
        if (result === undefined || item === undefined) continue;
        if (exhausted && !isExhausted(result)) continue;
        const params = item[1];
        params.set('r', remainingUnits(result));
        params.set('t', resetSeconds(result, exhausted));
        if (pk === undefined) params.delete('pk');
        else params.set('pk', pk);
        selected.push(item);
      }
      if (selected.length > 0) into.push([RATELIMIT, serializeList(selected)]);
    },
  };
}
