/**
 * @module The rate-limit header formats a middleware can send. `createHeaderWriter` picks the format
 * once, when the middleware is created; per request the writer only formats numbers.
 */
import type { PolicyDescription } from '../create-limiter.js';
import { createCompatWriter } from './compat-headers.js';
import { createDraft11Writer } from './draft11-headers.js';
import type { HeaderWriter } from './header-values.js';
import type { PartitionKeyFunction } from './partition-key.js';

/**
 * - `'draft-11'`: `RateLimit-Policy` and `RateLimit` per draft-ietf-httpapi-ratelimit-headers-11, one
 *   item per enforced policy (the default).
 * - `'draft-7'`, `'draft-6'`, `'legacy'` (`X-RateLimit-*`): the byte formats express-rate-limit sends,
 *   for clients written against them; they describe the binding policy only.
 * - `false`: no rate-limit headers (`Retry-After` is still sent on 429 and 503).
 */
export type HeaderMode = 'draft-11' | 'draft-7' | 'draft-6' | 'legacy' | false;

export const HEADER_MODES: readonly HeaderMode[] = ['draft-11', 'draft-7', 'draft-6', 'legacy', false];

export function createHeaderWriter(
  mode: HeaderMode,
  policies: readonly PolicyDescription[],
  partitionKey: PartitionKeyFunction | undefined,
): HeaderWriter | undefined {
  if (mode === false) return undefined;
  if (mode === 'draft-11') return createDraft11Writer(policies, partitionKey);
  return createCompatWriter(mode);
}
