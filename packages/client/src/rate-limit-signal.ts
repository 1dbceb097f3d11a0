/**
 * @module What a response says about the caller's quota, read from every dialect servers send:
 * `Retry-After` (delay-seconds or HTTP-date), draft-11 (and -08/-09/-10) `RateLimit` /
 * `RateLimit-Policy` Lists, draft-7's `RateLimit` Dictionary, draft-6's `RateLimit-Remaining` /
 * `RateLimit-Reset`, and the legacy `X-RateLimit-*` fields (reset as epoch seconds, epoch ms or delta
 * seconds). Structured fields go through `structured-headers`, as the server side writes them; a
 * malformed field is ignored whole (draft-11 section 7, RFC 9651 section 4.2), never guessed at.
 */
import { type Item, parseDictionary, parseList, Token } from 'structured-headers';
import { IMF_FIXDATES, parseHttpDate } from './http-date.js';

/** The header dialect the quota numbers were read from. */
export type RateLimitDialect = 'draft-11' | 'draft-7' | 'draft-6' | 'legacy';

/**
 * One policy a response reports on: a draft-11 item, or the single policy of the older dialects. Pacing
 * keeps a quota per policy and partition, so a spent policy holds only the requests that answer to it.
 */
export interface RateLimitItem {
  /**
   * The policy's name: draft-11's item name; for the legacy fields, `X-RateLimit-Resource` (GitHub's
   * `core`, `search`, ...); `''` when the dialect names none.
   */
  readonly name: string;
  /** draft-11 `pk` (on the item, else on its `RateLimit-Policy` member), base64 as sent; undefined when none. */
  readonly partition: string | undefined;
  /** Quota left (`r`, `remaining`). */
  readonly remaining: number;
  /** Time until that quota is back, ms (`t`, `reset`), when given. */
  readonly resetMs: number | undefined;
  /** The quota (`q`, `limit`), when given. */
  readonly limit: number | undefined;
  /** The policy's window (`w` of `RateLimit-Policy`), ms, when given. */
  readonly windowMs: number | undefined;
}

/** What one response says, in milliseconds relative to when it was read. */
export interface RateLimitSignal {
  /** From `Retry-After`: how long to wait before trying again. */
  readonly retryAfterMs: number | undefined;
  /** Quota left in the most restrictive policy the response lists (its units). */
  readonly remaining: number | undefined;
  /** Time until that quota is back (draft-11 `t`, draft-7 `reset`, the `*-Reset` fields). */
  readonly resetMs: number | undefined;
  /** That policy's quota (`q`, `limit`, `*-Limit`), when the response gives it. */
  readonly limit: number | undefined;
  /** Where `remaining`/`resetMs` came from; undefined when no dialect was present and well-formed. */
  readonly dialect: RateLimitDialect | undefined;
  /**
   * Every policy the response reports on (`remaining`, `resetMs` and `limit` above are the one with the
   * least left); empty or absent when it names none.
   */
  readonly policies?: readonly RateLimitItem[];
  /**
   * True for a response a cache served (`Age` above 0): its quota fields were ignored (draft-11 section
   * 7.3), and it tells nothing of the server now, not even that it took a request.
   */
  readonly cached?: boolean;
}

/** The structural view of response headers this module needs (a `Headers` is one). */
export interface HeaderGetter {
  get(name: string): string | null;
}

const NONE: RateLimitSignal = {
  retryAfterMs: undefined,
  remaining: undefined,
  resetMs: undefined,
  limit: undefined,
  dialect: undefined,
  policies: [],
};
const DIGITS = /^\d+$/;

/**
 * A non-negative integer field value (`1*DIGIT`, leading zeros and any length: a value past 2^53 is
 * read as the large number it is, never dropped), else undefined.
 */
function digits(value: string | null): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  return DIGITS.test(v) ? Number(v) : undefined;
}

function nonNegativeInteger(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/** The time the response was generated, from its `Date` field, so that HTTP-dates and epochs are read against the server's clock. */
function serverNow(headers: HeaderGetter, now: number): number {
  const date = headers.get('date');
  if (date === null) return now;
  const t = parseHttpDate(date, now);
  return Number.isFinite(t) ? t : now;
}

/** `Retry-After` in ms: delay-seconds, or an HTTP-date taken against the response's `Date`. */
export function readRetryAfter(headers: HeaderGetter, now: number): number | undefined {
  const raw = headers.get('retry-after');
  if (raw === null) return undefined;
  const seconds = digits(raw);
  if (seconds !== undefined) return seconds * 1000;
  // An HTTP-date (IMF-fixdate, or the obsolete RFC 850 and asctime forms, all UTC); anything else
  // ('in 5', 'May 1') is no Retry-After at all, so the RateLimit fields decide the wait.
  const at = parseHttpDate(raw, now);
  if (Number.isFinite(at)) return Math.max(0, at - serverNow(headers, now));
  return repeatedRetryAfter(raw, headers, now);
}

/**
 * `Retry-After` sent on several lines, which `Headers` joins with ", ": the longest of the waits (the
 * server's wait is never shortened). Each line delay-seconds or an IMF-fixdate, in any mix; anything
 * else is ignored.
 */
function repeatedRetryAfter(raw: string, headers: HeaderGetter, now: number): number | undefined {
  const dates = raw.match(IMF_FIXDATES) ?? [];
  const seconds = raw
    .replace(IMF_FIXDATES, '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (dates.length + seconds.length < 2 || !seconds.every((p) => DIGITS.test(p))) return undefined;
  const latest = Math.max(...dates.map((d) => parseHttpDate(d, now)));
  if (Number.isNaN(latest)) return undefined;
  const waits = seconds.map((p) => Number(p) * 1000);
  if (dates.length > 0) waits.push(Math.max(0, latest - serverNow(headers, now)));
  return Math.max(...waits);
}

function itemName(item: Item[0]): string | undefined {
  if (typeof item === 'string') return item;
  if (item instanceof Token) return item.toString();
  return undefined;
}

type Quota = Omit<RateLimitSignal, 'retryAfterMs'>;

/** A Byte Sequence (`pk`) as base64, or undefined for any other value. */
function partitionOf(value: unknown): string | undefined {
  if (!(value instanceof ArrayBuffer)) return undefined;
  let binary = '';
  for (const byte of new Uint8Array(value)) binary += String.fromCharCode(byte);
  return btoa(binary);
}

interface PolicyMember {
  readonly q: number | undefined;
  /** `w`, ms. */
  readonly w: number | undefined;
  readonly pk: string | undefined;
}

/** draft-11 `RateLimit-Policy` members by name (the first of a name). A malformed field is ignored whole. */
function policyMembers(policyField: string | null): Map<string, PolicyMember> {
  const out = new Map<string, PolicyMember>();
  if (policyField === null) return out;
  try {
    for (const member of parseList(policyField)) {
      if (Array.isArray(member[0])) continue;
      const name = itemName(member[0] as Item[0]);
      if (name === undefined || out.has(name)) continue;
      const w = nonNegativeInteger(member[1].get('w'));
      out.set(name, { q: nonNegativeInteger(member[1].get('q')), w: w ? w * 1000 : undefined, pk: partitionOf(member[1].get('pk')) });
    }
  } catch {
    // A malformed RateLimit-Policy is ignored; quotas and windows are then unknown.
  }
  return out;
}

/** An `r` or `t` parameter written as a Decimal (`;r=10.0`), which draft-11 defines as an Integer. */
const DECIMAL_RT = /;\s*[rt]=-?\d+\.\d/;
/** A String value (`c="x;r=1.5"`): its text is no parameter, taken out before DECIMAL_RT looks. */
const SF_STRING = /"(?:[^"\\]|\\.)*"/g;

/** draft-11: every item; the one with the least `r` (the longest `t` on a tie) is the summary. */
function readDraft11(rateLimit: string, policyField: string | null): Quota | undefined {
  let list: ReturnType<typeof parseList>;
  try {
    list = parseList(rateLimit);
  } catch {
    return undefined;
  }
  // A Decimal `r` or `t` (`r=10.0`): `structured-headers` reads it as the number it names, so the text tells.
  if (DECIMAL_RT.test(rateLimit.replace(SF_STRING, '""'))) return undefined;
  const members = policyMembers(policyField);
  const items: RateLimitItem[] = [];
  let best: RateLimitItem | undefined;
  for (const member of list) {
    // A malformed item makes the field malformed, ignored whole (draft-11 section 7): never the
    // friendlier items beside it alone, which would trust a quota the server may not have given.
    if (Array.isArray(member[0])) return undefined;
    const name = itemName(member[0] as Item[0]);
    const r = nonNegativeInteger(member[1].get('r'));
    const rawT = member[1].get('t');
    const t = nonNegativeInteger(rawT);
    // A name twice is no malformation draft-11 names: stacked express-rate-limit middlewares with one
    // limit and window send the same default name; each item counts (the least remaining wins).
    if (name === undefined || r === undefined || (rawT !== undefined && t === undefined)) return undefined;
    const policy = members.get(name);
    const item: RateLimitItem = {
      name,
      partition: partitionOf(member[1].get('pk')) ?? policy?.pk,
      remaining: r,
      resetMs: t === undefined ? undefined : t * 1000,
      limit: policy?.q,
      windowMs: policy?.w,
    };
    items.push(item);
    if (best === undefined || r < best.remaining || (r === best.remaining && (item.resetMs ?? 0) > (best.resetMs ?? 0))) best = item;
  }
  if (best === undefined) return undefined;
  return { remaining: best.remaining, resetMs: best.resetMs, limit: best.limit, dialect: 'draft-11', policies: items };
}

/** The window (`w`, ms) of a draft-6/7 `RateLimit-Policy: 100;w=60`, when there is one. */
function legacyWindow(policyField: string | null): number | undefined {
  if (policyField === null) return undefined;
  try {
    const first = parseList(policyField)[0];
    if (first === undefined || Array.isArray(first[0]) || typeof first[0] !== 'number') return undefined;
    const w = nonNegativeInteger(first[1].get('w'));
    return w ? w * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** The one policy of the older dialects, as an item (none without `remaining`). */
function single(quota: Pick<Quota, 'remaining' | 'resetMs' | 'limit'>, name: string, windowMs: number | undefined): RateLimitItem[] {
  if (quota.remaining === undefined) return [];
  return [{ name, partition: undefined, remaining: quota.remaining, resetMs: quota.resetMs, limit: quota.limit, windowMs }];
}

/** draft-7: `RateLimit: limit=100, remaining=50, reset=5` (an SF Dictionary). */
function readDraft7(rateLimit: string, policyField: string | null): Quota | undefined {
  let dict: ReturnType<typeof parseDictionary>;
  try {
    dict = parseDictionary(rateLimit);
  } catch {
    return undefined;
  }
  const member = (key: string) => {
    const m = dict.get(key);
    return m === undefined || Array.isArray(m[0]) ? undefined : nonNegativeInteger(m[0]);
  };
  const remaining = member('remaining');
  const reset = member('reset');
  if (remaining === undefined && reset === undefined) return undefined;
  const quota = { remaining, resetMs: reset === undefined ? undefined : reset * 1000, limit: member('limit') };
  return { ...quota, dialect: 'draft-7', policies: single(quota, '', legacyWindow(policyField)) };
}

/**
 * A legacy reset: Unix epoch seconds (GitHub, express-rate-limit), epoch milliseconds, or delta seconds
 * (values below one billion: no epoch of this century is that small), as ms from now.
 */
function legacyReset(value: number | undefined, headers: HeaderGetter, now: number): number | undefined {
  if (value === undefined) return undefined;
  if (value >= 1e12) return Math.max(0, value - serverNow(headers, now));
  if (value >= 1e9) return Math.max(0, value * 1000 - serverNow(headers, now));
  return value * 1000;
}

/**
 * Everything `headers` says about the quota, `now` being the local wall clock (ms since the epoch).
 * Dialects are tried newest first; the first well-formed one wins. A response from a cache (`Age`
 * above 0) says nothing of the quota, only its `Retry-After`.
 */
export function readRateLimitSignal(headers: HeaderGetter, now: number = Date.now()): RateLimitSignal {
  const retryAfterMs = readRetryAfter(headers, now);
  // A response a cache served (a positive `Age`) tells of the quota as it was when it was stored:
  // draft-11 section 7.3, its quota fields are ignored.
  if ((digits(headers.get('age')) ?? 0) > 0) return { ...NONE, retryAfterMs, cached: true };
  const rateLimit = headers.get('ratelimit');
  const policyField = headers.get('ratelimit-policy');
  if (rateLimit !== null) {
    const quota = readDraft11(rateLimit, policyField) ?? readDraft7(rateLimit, policyField);
    if (quota !== undefined) return { retryAfterMs, ...quota };
  }
  const remaining6 = digits(headers.get('ratelimit-remaining'));
  if (remaining6 !== undefined) {
    const reset = digits(headers.get('ratelimit-reset'));
    const quota = {
      remaining: remaining6,
      resetMs: reset === undefined ? undefined : reset * 1000,
      limit: digits(headers.get('ratelimit-limit')),
    };
    return { retryAfterMs, ...quota, dialect: 'draft-6', policies: single(quota, '', legacyWindow(policyField)) };
  }
  const remainingX = digits(headers.get('x-ratelimit-remaining'));
  if (remainingX !== undefined) {
    const quota = {
      remaining: remainingX,
      resetMs: legacyReset(digits(headers.get('x-ratelimit-reset')), headers, now),
      limit: digits(headers.get('x-ratelimit-limit')),
    };
    // GitHub names the quota a request counted against (core, search, graphql, ...): octokit's throttling keys by it.
    const resource = headers.get('x-ratelimit-resource')?.trim() ?? '';
    return { retryAfterMs, ...quota, dialect: 'legacy', policies: single(quota, resource, undefined) };
  }
  return retryAfterMs === undefined ? NONE : { ...NONE, retryAfterMs };
}

/**
 * The wait a refused response asks for: `Retry-After` first (draft-11 section 7: it takes precedence),
 * else the reset of a policy with nothing left. Undefined when the response names no wait.
 */
export function serverWaitMs(signal: RateLimitSignal): number | undefined {
  if (signal.retryAfterMs !== undefined) return signal.retryAfterMs;
  if (signal.remaining !== undefined && signal.remaining < 1 && signal.resetMs !== undefined) return signal.resetMs;
  return undefined;
}
