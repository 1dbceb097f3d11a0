/**
 * @module The rate-limit header formats by name, read by the writers of each format and by the options.
 */

/**
 * - `'draft-11'`: `RateLimit-Policy` and `RateLimit` per draft-ietf-httpapi-ratelimit-headers-11, one
 *   item per enforced policy (the default).
 * - `'draft-7'`, `'draft-6'`, `'legacy'` (`X-RateLimit-*`): the byte formats express-rate-limit sends,
 *   for clients written against them; they describe the binding policy only.
 * - `false`: no rate-limit headers (`Retry-After` is still sent on 429 and 503).
 */
export type HeaderMode = 'draft-11' | 'draft-7' | 'draft-6' | 'legacy' | false;

/** Every value `headers` accepts alone, in the order of preference. */
export const HEADER_MODES: readonly HeaderMode[] = ['draft-11', 'draft-7', 'draft-6', 'legacy', false];

/**
 * One format, or several sent together, in the order given: `['legacy', 'draft-7']` is what
 * express-rate-limit sends with `legacyHeaders: true, standardHeaders: 'draft-7'` (legacy first). At
 * most one of `'draft-11'`, `'draft-7'`, `'draft-6'`, since they share the `RateLimit-Policy` name.
 */
export type HeadersOption = HeaderMode | readonly Exclude<HeaderMode, false>[];
