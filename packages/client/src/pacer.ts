/**
 * @module Pacing from the quotas a server advertises: slow down before a quota runs out instead of after.
 *
 * **What is paced by what.** A quota is kept per origin, policy name and partition: draft-11's `pk` when
 * the response names one (the server's own word for whose quota it is), else the caller's partition
 * (`pacing.key`, by default the request's `Authorization`). A request line (method and path, id-like
 * segments folded into `:id`) learns, per caller partition, which quotas its responses reported (octokit's
 * throttling keeps one limiter per GitHub resource the same way); a request is held only by the quotas
 * of its own line. A spent `search` policy never holds `/users` (policy `core`), nor another API key's
 * `/search`; a line never seen is held by nothing (its first request probes, below).
 *
 * **Counting down.** A quota's last `remaining` is counted down locally as requests leave, so concurrent
 * calls do not all spend the same last unit. A response's `remaining` was counted when the server took
 * its request: the attempts still in flight to that quota then (`sent`, not yet `landed`) are taken off
 * it, since the server counts them after. While more than `paceBelow` of the quota is left, nothing
 * waits; below that, the requests left are spread evenly over the time to the reset, one interval apart
 * (the interval fixed when pacing starts).
 *
 * **Nothing left.** Requests wait for the reset, then come back jittered past it: each quota draws, when
 * its numbers come, a point in `[reset, reset + spread)`, `spread` one pacing interval (window / quota:
 * the policy's `w` or the longest `t` seen, over its `q` or the most ever left), at most what `maxDelayMs`
 * leaves above the reset. Separate clients told the same reset (separate processes) then come back over
 * that interval, not at one instant (draft-11 section 8.5's thundering herd). Within one client, the first
 * request after that point is a probe, sent alone: the others wait until its response brings new numbers,
 * or until its attempt ends without them (nothing is known: nothing waits), or for at most
 * {@link PROBE_WAIT_MS}, after which the next request probes.
 *
 * **A reset too far.** When the reset (with this client's jitter) lies beyond what the request may wait
 * (`maxDelayMs`, or its deadline), nothing waits: the request is answered at once with a local refusal
 * (the status the server last refused with, 429 if it never did, and the time to the reset as
 * `Retry-After`), as the retry path returns a refusal whose wait is too long. That answer is at most
 * `maxDelayMs` old: after that, one request goes to the server alone (a server that said "an hour" may
 * be back sooner, and one absurd `Retry-After` costs one request per `maxDelayMs`, never all of them).
 *
 * **First contact.** A line not heard from in a partition is treated as one whose reset just passed: its
 * first request probes alone, the others wait for its numbers. A line whose responses bring no numbers is
 * remembered as heard, so only its first burst waits for one answer.
 *
 * Memory is bounded: at most `maxEntries` lines and `maxEntries` quotas (the oldest forgotten first), and
 * {@link MAX_LINE_POLICIES} quotas per line.
 */
import type { RateLimitItem, RateLimitSignal } from './rate-limit-signal.js';

/** How long requests wait for a probe's answer before the next one probes, ms. */
export const PROBE_WAIT_MS = 1000;

/** The most quotas one request line is held by (the most recently reported kept). */
export const MAX_LINE_POLICIES = 8;

/** Where a request goes, as pacing sees it: built once per call. */
export interface PacingScope {
  readonly origin: string;
  /** The caller's partition (`pacing.key`'s answer, hashed); `''` for none. */
  readonly partition: string;
  /** Method and path, id-like segments folded (`GET /users/:id`). */
  readonly line: string;
  /** The three together: the key of the line's map entry. */
  readonly id: string;
}

/** What the pacer answers a request: go (after `waitMs`), wait and ask again, or be refused at once. */
export type Reservation =
  | { readonly kind: 'go'; readonly waitMs: number; readonly ticket: PacingTicket | undefined }
  /** Ask again after `waitMs`, or as soon as `renewed` settles (new numbers, a probe's end). */
  | { readonly kind: 'wait'; readonly waitMs: number; readonly renewed: Promise<void> | undefined }
  /** The reset is beyond what the request may wait: answer it with this, unsent. */
  | { readonly kind: 'refuse'; readonly status: number; readonly retryAfterMs: number };

/** What a request probes (a line's first contact, quotas whose reset passed): hand it to `settled` when its attempt is over. */
export interface PacingTicket {
  readonly line: Line | undefined;
  readonly quotas: readonly Quota[];
}

interface Deferred {
  readonly promise: Promise<void>;
  readonly resolve: () => void;
}

function deferred(): Deferred {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** What is known of one request line in one partition. */
interface Line {
  readonly scope: PacingScope;
  /** The quotas (ids) its responses reported, most recent first. */
  readonly quotas: string[];
  /** Answered at least once (numbers or not): its first request no longer probes. */
  heard: boolean;
  /** First contact: until when the others wait for the probe in flight. */
  probeUntil: number | undefined;
  renewed: Deferred | undefined;
}

/** One policy's quota in one partition of one origin. */
interface Quota {
  readonly id: string;
  /** `attempts` when these numbers were observed: the attempts sent after them are numbered higher. */
  readonly observedAt: number;
  /** The clock when they came: a local refusal is answered from them for at most `maxDelayMs`. */
  readonly heardAt: number;
  remaining: number;
  readonly resetAt: number;
  readonly limit: number | undefined;
  /** With nothing left, how far past the reset this client comes back (the herd's jitter), ms. */
  readonly jitterMs: number;
  /** The window (`w`, else the longest `t` seen) and the quota (`q`, else the most ever left), for the spread. */
  readonly windowMs: number;
  readonly quota: number;
  /** The status of the last refusal that found this quota spent: a local refusal answers with it. */
  readonly refusedWith: number | undefined;
  /** The earliest time the next paced request may leave. */
  nextAt: number;
  /** A probe in flight: until when the others wait for it. */
  probeUntil: number | undefined;
  renewed: Deferred | undefined;
}

/** Per quota of a line, what a request may do. */
type Verdict =
  | { readonly kind: 'unit' }
  | { readonly kind: 'probe' }
  | { readonly kind: 'wait'; readonly waitMs: number }
  | { readonly kind: 'refuse'; readonly status: number; readonly retryAfterMs: number };

const UNIT: Verdict = { kind: 'unit' };
const PROBE: Verdict = { kind: 'probe' };

/** Path segments that name one resource among many: digits, UUIDs, long hex, long tokens with a digit. */
const ID_SEGMENT = /^(?:\d+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{16,}|(?=[^/]*\d)[\w.~-]{20,})$/i;
const MAX_PATH = 256;

/** `GET /users/:id`: the method and the path with id-like segments folded, so `/users/1` and `/users/2` are one line. */
export function requestLine(method: string, pathname: string): string {
  const path = pathname
    .split('/')
    .map((segment) => (ID_SEGMENT.test(segment) ? ':id' : segment))
    .join('/');
  return `${method} ${path.length > MAX_PATH ? path.slice(0, MAX_PATH) : path}`;
}

/**
 * A 53-bit hash (cyrb53) of a partition key, base 36: credentials are not kept as they are, and two keys
 * that collide only share one partition (pacing then errs on the cautious side).
 */
export function hashKey(key: string): string {
  if (key === '') return '';
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < key.length; i++) {
    const ch = key.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36);
}

export function pacingScope(origin: string, partition: string, line: string): PacingScope {
  return { origin, partition, line, id: `${origin}\n${partition}\n${line}` };
}

export interface PacerOptions {
  /** The share of a quota below which requests are spread out. */
  readonly paceBelow: number;
  /** The longest a request is held, ms: the room for jitter above a reset, and the age of a local refusal. */
  readonly maxDelayMs: number;
  readonly clock: () => number;
  /** In [0, 1): each quota's jitter past its reset. */
  readonly random: () => number;
  /** Lines and quotas kept, each. Defaults to 1,000. */
  readonly maxEntries?: number;
}

export class Pacer {
  private readonly lines = new Map<string, Line>();
  private readonly quotas = new Map<string, Quota>();
  /** Attempts in flight per quota (an entry only while some are). */
  private readonly flying = new Map<string, number>();
  private readonly maxEntries: number;

  constructor(private readonly options: PacerOptions) {
    this.maxEntries = options.maxEntries ?? 1000;
  }

  /** Attempts sent so far, everywhere: an attempt's number is this before it leaves. */
  attempts = 0;

  /** Lines and quotas kept, for tests of the bounds. */
  sizes(): { lines: number; quotas: number; flying: number } {
    return { lines: this.lines.size, quotas: this.quotas.size, flying: this.flying.size };
  }

  /** An attempt on `scope` leaves (every attempt, paced or not, retries too); returns what `landed` takes. */
  sent(scope: PacingScope): readonly string[] {
    this.attempts += 1;
    const ids = this.lines.get(scope.id)?.quotas.slice() ?? [];
    for (const id of ids) this.flying.set(id, (this.flying.get(id) ?? 0) + 1);
    return ids;
  }

  /** An attempt ended (a response, or none), before its response is observed. */
  landed(ids: readonly string[]): void {
    for (const id of ids) {
      const n = (this.flying.get(id) ?? 0) - 1;
      if (n > 0) this.flying.set(id, n);
      else this.flying.delete(id);
    }
  }

  /**
   * Records what a response on `scope` said of each quota it reports (less the attempts still in flight
   * to it), teaches its line those quotas, and wakes the requests waiting for new numbers. A response
   * with `Retry-After` but no quota numbers (nginx `limit_req`, many CDNs) says the line's unnamed
   * quota is spent until then.
   */
  observe(scope: PacingScope, signal: RateLimitSignal, status: number): void {
    let items = (signal.policies ?? []).filter((p) => p.resetMs !== undefined);
    if (items.length === 0) {
      if (signal.retryAfterMs === undefined) return;
      items = [{ name: '', partition: undefined, remaining: 0, resetMs: signal.retryAfterMs, limit: undefined, windowMs: undefined }];
    }
    const line = this.line(scope);
    for (const item of items) {
      const id = `${scope.origin}\n${item.name}\n${item.partition === undefined ? `key:${scope.partition}` : `pk:${item.partition}`}`;
      this.record(id, item, status);
      const at = line.quotas.indexOf(id);
      if (at >= 0) line.quotas.splice(at, 1);
      line.quotas.unshift(id);
      if (line.quotas.length > MAX_LINE_POLICIES) line.quotas.length = MAX_LINE_POLICIES;
    }
    this.heard(line);
  }

  /** Keeps `item`'s numbers as quota `id`, replacing (and waking the waiters of) what was known. */
  private record(id: string, item: RateLimitItem, status: number): void {
    const { clock, random, maxDelayMs } = this.options;
    const now = clock();
    const previous = this.quotas.get(id);
    const resetMs = item.resetMs ?? 0;
    const windowMs = item.windowMs ?? Math.max(previous?.windowMs ?? 0, resetMs);
    const quota = item.limit ?? Math.max(previous?.quota ?? 0, item.remaining + 1);
    // One pacing interval past the reset, within what maxDelayMs leaves above it (as the retry's jitter).
    const spread = Math.min(windowMs / Math.max(1, quota), Math.max(0, maxDelayMs - resetMs));
    const spent = item.remaining < 1 && status >= 400;
    this.keep(this.quotas, id, {
      id,
      observedAt: this.attempts,
      heardAt: now,
      remaining: Math.max(0, item.remaining - (this.flying.get(id) ?? 0)),
      resetAt: now + resetMs,
      limit: item.limit,
      jitterMs: Math.floor(random() * spread),
      windowMs,
      quota,
      refusedWith: spent ? status : previous?.refusedWith,
      nextAt: previous?.nextAt ?? now,
      probeUntil: undefined,
      renewed: undefined,
    });
    previous?.renewed?.resolve();
  }

  /**
   * A response on `scope`, to the attempt numbered `attempt`, that was not refused and named no quota or
   * wait: each of the line's quotas held at nothing left since before that attempt left (a `Retry-After`
   * beyond `maxDelayMs`, or one so large it never ends) is disproved (the server took a request) and
   * forgotten; a quota with numbers left is kept, and so is one observed after the attempt left (a 200
   * on its way when the 429 came says nothing of it).
   */
  answered(scope: PacingScope, attempt: number): void {
    const line = this.line(scope);
    for (const id of line.quotas) {
      const q = this.quotas.get(id);
      if (q === undefined || q.remaining >= 1 || attempt < q.observedAt) continue;
      this.forget(id, q);
    }
    this.heard(line);
  }

  /**
   * A probe's attempt is over: a quota it probed that its response did not renew (no numbers for it, or
   * no response) is unknown again, and nothing waits for it; a line it probed counts as heard.
   */
  settled(ticket: PacingTicket): void {
    if (ticket.line !== undefined) this.heard(ticket.line);
    for (const q of ticket.quotas) if (this.quotas.get(q.id) === q && q.probeUntil !== undefined) this.forget(q.id, q);
  }

  /**
   * What a request on `scope` may do now, reserving its unit of each of its line's quotas when it may go;
   * `allowMs` is how much longer it may wait (what is left of `maxDelayMs`, and of its deadline).
   */
  reserve(scope: PacingScope, allowMs: number): Reservation {
    const now = this.options.clock();
    const line = this.lines.get(scope.id);
    if (line === undefined || !line.heard) return this.firstContact(scope, line, now);
    this.keep(this.lines, scope.id, line);
    const quotas: Quota[] = [];
    const verdicts: Verdict[] = [];
    for (const id of line.quotas) {
      const q = this.quotas.get(id);
      if (q === undefined) continue;
      quotas.push(q);
      verdicts.push(this.verdict(q, now, allowMs));
    }
    const refusals = verdicts.filter((v) => v.kind === 'refuse');
    if (refusals.length > 0) return refusals.reduce((a, b) => (b.retryAfterMs > a.retryAfterMs ? b : a));
    const waits = quotas.filter((_, i) => verdicts[i]?.kind === 'wait');
    if (waits.length > 0) {
      const waitMs = Math.max(...verdicts.map((v) => (v.kind === 'wait' ? v.waitMs : 0)));
      const renewed = waits.map((q) => this.renewal(q));
      return { kind: 'wait', waitMs, renewed: renewed.length === 1 ? renewed[0] : Promise.race(renewed) };
    }
    // Every quota lets it go: probe the ones whose reset passed, take a unit of the others.
    let waitMs = 0;
    const probed: Quota[] = [];
    quotas.forEach((q, i) => {
      if (verdicts[i]?.kind === 'probe') {
        q.probeUntil = now + PROBE_WAIT_MS;
        probed.push(q);
      } else waitMs = Math.max(waitMs, this.take(q, now));
    });
    return { kind: 'go', waitMs, ticket: probed.length > 0 ? { line: undefined, quotas: probed } : undefined };
  }

  /** What quota `q` lets a request do at `now`, changing nothing. */
  private verdict(q: Quota, now: number, allowMs: number): Verdict {
    if (q.remaining >= 1) return now >= q.resetAt ? this.probeOrWait(q, now) : UNIT;
    const opensAt = q.resetAt + q.jitterMs;
    if (now >= opensAt) return this.probeOrWait(q, now);
    if (opensAt - now <= allowMs) return { kind: 'wait', waitMs: opensAt - now };
    // Past the server's reset, only this client's jitter left and no time to wait it: as after the reset.
    if (now >= q.resetAt) return this.probeOrWait(q, now);
    // Beyond what the request may wait: answered at once, from numbers at most maxDelayMs old; older,
    // one request goes to the server alone (the others are still answered at once).
    const probing = q.probeUntil !== undefined && now < q.probeUntil;
    if (probing || now - q.heardAt < this.options.maxDelayMs) {
      return { kind: 'refuse', status: q.refusedWith ?? 429, retryAfterMs: q.resetAt - now };
    }
    return PROBE;
  }

  /** Past the reset: the first request probes; the others wait for its answer, at most PROBE_WAIT_MS. */
  private probeOrWait(q: Quota, now: number): Verdict {
    if (q.probeUntil === undefined || now >= q.probeUntil) return PROBE;
    return { kind: 'wait', waitMs: q.probeUntil - now };
  }

  /** Takes a unit of `q`; returns how long the request waits for its paced slot (0 above `paceBelow`). */
  private take(q: Quota, now: number): number {
    const threshold = q.limit === undefined ? 1 : Math.max(1, Math.floor(q.limit * this.options.paceBelow));
    q.remaining -= 1;
    if (q.remaining + 1 > threshold) return 0;
    const at = Math.max(now, q.nextAt);
    q.nextAt = at + (q.resetAt - at) / (q.remaining + 1);
    return Math.ceil(at - now);
  }

  /** A line not heard from: its first request probes alone, the others wait for its answer (at most PROBE_WAIT_MS). */
  private firstContact(scope: PacingScope, known: Line | undefined, now: number): Reservation {
    const line = known ?? this.line(scope);
    if (line.probeUntil === undefined || now >= line.probeUntil) {
      line.probeUntil = now + PROBE_WAIT_MS;
      return { kind: 'go', waitMs: 0, ticket: { line, quotas: [] } };
    }
    line.renewed ??= deferred();
    return { kind: 'wait', waitMs: line.probeUntil - now, renewed: line.renewed.promise };
  }

  /** The line of `scope`, made when missing. */
  private line(scope: PacingScope): Line {
    const known = this.lines.get(scope.id);
    if (known !== undefined) return known;
    const line: Line = { scope, quotas: [], heard: false, probeUntil: undefined, renewed: undefined };
    this.keep(this.lines, scope.id, line);
    return line;
  }

  /** `line` answered: its first requests no longer probe, and those waiting for its probe ask again. */
  private heard(line: Line): void {
    line.heard = true;
    line.probeUntil = undefined;
    line.renewed?.resolve();
    line.renewed = undefined;
  }

  /** Settles when `q`'s numbers change (new numbers, forgotten, or a probe's end). */
  private renewal(q: Quota): Promise<void> {
    if (q.renewed === undefined) q.renewed = deferred();
    return q.renewed.promise;
  }

  private forget(id: string, q: Quota): void {
    this.quotas.delete(id);
    q.renewed?.resolve();
  }

  /** Sets `key` last in `map` (the most recently used), forgetting the oldest entry when `maxEntries` are kept. */
  private keep<V extends { renewed: Deferred | undefined }>(map: Map<string, V>, key: string, value: V): void {
    map.delete(key);
    if (map.size >= this.maxEntries) {
      const oldest = map.entries().next().value;
      if (oldest !== undefined) {
        map.delete(oldest[0]);
        oldest[1].renewed?.resolve();
      }
    }
    map.set(key, value);
  }
}
