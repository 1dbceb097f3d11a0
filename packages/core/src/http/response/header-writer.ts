/**
 * @module The rate-limit header formats a middleware can send. `createHeaderWriter` picks the format
 * once, when the middleware is created; per request the writer only formats numbers.
 */
import type { PolicyDescription } from '../../types.js';
import type { PartitionKeyFunction } from '../keys/partition-key.js';
import { createCompatWriter } from './compat-headers.js';
import { createDraft11Writer } from './draft11-headers.js';
import type { HeaderWriter } from './header-values.js';

/**
 * - `'draft-11'`: `RateLimit-Policy` and `RateLimit` per draft-ietf-httpapi-ratelimit-headers-11, one
 *   item per enforced policy (the default).
 * - `'draft-7'`, `'draft-6'`, `'legacy'` (`X-RateLimit-*`): the byte formats express-rate-limit sends,
 *   for clients written against them; they describe the binding policy only.
 * - `false`: no rate-limit headers (`Retry-After` is still sent on 429 and 503).
 */
export type HeaderMode = 'draft-11' | 'draft-7' | 'draft-6' | 'legacy' | false;

export const HEADER_MODES: readonly HeaderMode[] = ['draft-11', 'draft-7', 'draft-6', 'legacy', false];

/**
 * One format, or several sent together, in the order given: `['legacy', 'draft-7']` is what
 * express-rate-limit sends with `legacyHeaders: true, standardHeaders: 'draft-7'` (legacy first). At
 * most one of `'draft-11'`, `'draft-7'`, `'draft-6'`, since they share the `RateLimit-Policy` name.
 */
export type HeadersOption = HeaderMode | readonly Exclude<HeaderMode, false>[];

function createOne(
  mode: Exclude<HeaderMode, false>,
  policies: readonly PolicyDescription[],
  partitionKey: PartitionKeyFunction | undefined,
): HeaderWriter {
  return mode === 'draft-11' ? createDraft11Writer(policies, partitionKey) : createCompatWriter(mode);
}

export function createHeaderWriter(
  mode: HeadersOption,
  policies: readonly PolicyDescription[],
  partitionKey: PartitionKeyFunction | undefined,
): HeaderWriter | undefined {
  if (mode === false) return undefined;
  if (typeof mode === 'string') return createOne(mode, policies, partitionKey);
  const writers = mode.map((m) => createOne(m, policies, partitionKey));
  if (writers.length === 1) return writers[0];
  return {
    write(decision, exhausted, clock, into) {
      for (const w of writers) w.write(decision, exhausted, clock, into);
    },
  };
}

/** The modes `headers` turns on, as a list (`false` is none). */
export function headerModes(mode: HeadersOption): readonly Exclude<HeaderMode, false>[] {
  return mode === false ? [] : typeof mode === 'string' ? [mode] : mode;
}
