/**
 * @module Pacing from the quotas a server advertises: slow down before a quota runs out instead of after.
 *
 * **What is paced by what.** A quota is kept per origin, policy name and partition: draft-11's `pk` when
 * the response names one (the server's own word for whose quota it is), else the caller's partition
 * (`pacing.key`, by default the request's `Authorization`). A request line (method and path, id-like
 * segments folded into `:id`) learns, per caller partition, which quotas its responses reported (octokit's
 * throttling keeps one limiter per GitHub resource the same way); a request is held only by the quotas
 * of its own line. A spent `search` policy never holds `/users` (policy `core`), nor another API key's
 * `/search`. A line not heard from yet (a new line: `/users/<login>` is one at every login) answers to
 * what its partition's new lines were found answering to (below).
 *
 * **Counting down.** A quota's last `remaining` is counted down locally as requests leave, so concurrent
 * calls do not all spend the same last unit. A response's `remaining` was counted when the server took
 * its request: the attempts still in flight to that quota then (`sent`, not yet `landed`) are taken off
 * it, since the server counts them after, and so are the units granted to requests still waiting for
 * their paced slots (not `redeem`ed yet). When those outnumber what is left, the excess does not leave
 * at its slot: it asks again (`redeem` answers false), so a server that says "9 left" (or "0 left, 429")
 * while twelve are granted gets nine (or none) of them. While more than `paceBelow` of the quota is left, nothing
 * waits; below that, the requests left are spread evenly over the time to the reset, one interval apart
 * (the interval fixed when pacing starts).
 *
 * **Nothing left.** Requests wait for the reset, then come back jittered past it: each quota draws, when
 * its numbers come, a point in `[reset, reset + spread)`, `spread` one pacing interval (window / quota:
 * the policy's `w` or the longest `t` seen, over its `q` or the most ever left), at most what `maxDelayMs`
 * leaves above the reset. Separate clients told the same reset (separate processes) then come back over
 * that interval, not at one instant (draft-11 section 8.5's thundering herd). Within one client, the first
 * request after that point is a probe, sent alone: the others wait until its response brings new numbers,
 * or until its response brings none (nothing is known: nothing waits), or for at most
 * {@link PROBE_WAIT_MS}, or until it ends without a response (aborted, failed), after which the next
 * request probes.
 *
 * **A reset too far.** When the reset (with this client's jitter) lies beyond what the request may wait
 * (`maxDelayMs`, or its deadline), nothing waits: the request is answered at once with a local refusal
 * (the status, 429 or 503, the server last refused with, 429 if it never did, and the time to the reset as
 * `Retry-After`), as the retry path returns a refusal whose wait is too long. That answer is at most
 * `maxDelayMs` old: after that, one request goes to the server alone (a server that said "an hour" may
 * be back sooner, and one absurd `Retry-After` costs one request per `maxDelayMs`, never all of them).
 *
 * **First contact.** A partition not heard from (a new origin, a new credential) is treated as one whose
 * reset just passed: its first request probes alone, the others (on any line) wait for its answer (one
 * ended without a response: the next one probes). A partition whose responses bring no numbers is
 * remembered as heard, so only its first burst waits.
 *
 * **New lines.** Paths that carry names (`/users/<login>`, `/repos/<owner>/<repo>`) make a new line at
 * every name, and such lines answer to the quotas the lines before them did. So a new line, in a partition
 * heard from, is held and charged as a line answering to the quotas the last two first answers of lines in
 * its partition both named (`Evidence.answers`); a unit taken of a quota its own answer does not name is
 * given back. Any other quota of the partition that is spent holds new lines only until a first answer
 * that came after the spending names other quotas: until then one new line goes at a time, as a probe
 * (the others wait for the new lines on their way, at most {@link PROBE_WAIT_MS}). A spent `core` thus
 * holds every new `/users/<login>` after one 429, not twenty; a `search` spent by `/search` holds them
 * for one answer, once. With no spent quota in the partition, a new line waits for nothing but the
 * pacing of the quotas new lines answer to.
 *
 * Memory is bounded: at most `maxEntries` lines, `maxEntries` partitions and `maxEntries` quotas (the
 * oldest forgotten first), {@link MAX_LINE_POLICIES} quotas per line and {@link MAX_PARTITION_POLICIES}
 * per partition.
 */
import type { RateLimitItem, RateLimitSignal } from './rate-limit-signal.js';

/**
 * The statuses that refuse a request for want of quota (RFC 6585's 429, RFC 9110's 503): only these
 * are a refusal a local one repeats, and only on these does a `Retry-After` without numbers say a quota
 * is spent (a 202's or a 3xx's `Retry-After` is a hint when to poll or follow, a 404 with `r=0` spent
 * its unit on a missing resource).
 */
const REFUSALS: ReadonlySet<number> = new Set([429, 503]);

/** How long requests wait for a probe's answer before the next one probes, ms. */
export const PROBE_WAIT_MS = 1000;

/** The most quotas one request line is held by (the most recently reported kept). */
export const MAX_LINE_POLICIES = 8;

/** The most quotas kept per partition for its new lines (the most recently reported kept). */
export const MAX_PARTITION_POLICIES = 16;

/** Where a request goes, as pacing sees it: built once per call. */
export interface PacingScope {
  readonly origin: string;
  /** The caller's partition (`pacing.key`'s answer, hashed); `''` for none. */
  readonly partition: string;
  /** Method and path, id-like segments folded (`GET /users/:id`). */
  readonly line: string;
  /** The three together: the key of the line's map entry. */
  readonly id: string;
  /** Origin and partition: the key of the partition's map entry. */
  readonly partitionId: string;
}

/**
 * What the pacer answers a request: go (after `waitMs`, then `redeem` it), wait and ask again, or be
 * refused at once.
 */
export type Reservation =
  | {
      readonly kind: 'go';
      readonly waitMs: number;
      readonly ticket: PacingTicket | undefined;
      /** The units it took, with their pacing slots: the grant is `redeem`ed as it leaves, `forsake`n if it never does. */
      readonly charges: readonly Charge[];
    }
  /** Ask again after `waitMs`, or as soon as `renewed` settles (new numbers, a probe's end). */
  | { readonly kind: 'wait'; readonly waitMs: number; readonly renewed: Promise<void> | undefined }
  /** The reset is beyond what the request may wait: answer it with this, unsent. */
  | { readonly kind: 'refuse'; readonly status: number; readonly retryAfterMs: number };

/** A reservation to go: `redeem` it as the request leaves, `forsake` it if it never does. */
export type Grant = Extract<Reservation, { kind: 'go' }>;

/**
 * What a first attempt left with, when the pacer must hear how it ended (a partition's first contact, a
 * new line's attempt, quotas whose reset passed): hand it to `settled` when the attempt is over.
 */
export interface PacingTicket {
  readonly scope: PacingScope;
  /** `'first'`: a partition's first contact; `'new'`: a new line's attempt; `'line'`: a known line's probe. */
  readonly kind: 'first' | 'new' | 'line';
  readonly partition: Partition | undefined;
  /** Quotas whose reset passed: it probes them. */
  readonly probed: readonly Quota[];
  /**
   * Units a new line took on evidence alone: given back when its line turns out not to answer to their
   * quotas (emptied when they went back already: `Pacer.forsake`).
   */
  charged: readonly Charge[];
  done: boolean;
}

/** A unit taken of a quota, and its pacing slot (`nextAt` before and after), to give back. */
export interface Charge {
  readonly quota: Quota;
  readonly nextAt: number;
  readonly after: number;
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

/** What is known of one request line in one partition: it exists once a response came on it. */
interface Line {
  readonly scope: PacingScope;
  /** The quotas (ids) its responses reported, most recent first. */
  readonly quotas: string[];
}

/**
 * What is known of one caller partition of one origin, for its lines not heard from yet ("new lines"):
 * whether anything answered in it, its quotas, and what the latest new line's first answer named.
 */
interface Partition {
  /** A response came in this partition: its new lines no longer wait for a first contact. */
  heard: boolean;
  /** First contact: until when the others wait for the probe in flight. */
  probeUntil: number | undefined;
  /** The quotas (ids) its lines reported, most recent first. */
  readonly quotas: string[];
  /** What the last two first answers of lines named, and when the latest came (`Pacer.seq`). */
  evidence: Evidence | undefined;
  /** First attempts of new lines on their way (their answers are new evidence), and when the last left. */
  flying: number;
  sentAt: number;
  /** Settles when a new line's attempt ends or a first answer comes. */
  renewed: Deferred | undefined;
}

/**
 * What a partition's new lines answer to, as far as the first answers of its lines tell: the quotas both
 * of the last two named (`answers`), the latest's, and when it came.
 */
interface Evidence {
  readonly answers: readonly string[];
  readonly latest: readonly string[];
  readonly seq: number;
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
  /** With nothing left: since when (`Pacer.seq`), to tell evidence about new lines older than that. */
  spentSince: number | undefined;
  /** The earliest time the next paced request may leave. */
  nextAt: number;
  /**
   * The earliest slot given back by a grant forsaken while later slots were still granted: `nextAt`
   * goes back to it once no grant waits (Pacer.forsake), unless a request left since (`redeem`).
   */
  freedAt: number | undefined;
  /**
   * Units granted before these numbers came, still waiting for their slots, beyond what the numbers
   * left: that many of them do not leave (Pacer.redeem) but ask again.
   */
  overdrawn: number;
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
  return { origin, partition, line, id: `${origin}\n${partition}\n${line}`, partitionId: `${origin}\n${partition}` };
}

export interface PacerOptions {
  /** The share of a quota below which requests are spread out. */
  readonly paceBelow: number;
  /** The longest a request is held, ms: the room for jitter above a reset, and the age of a local refusal. */
  readonly maxDelayMs: number;
  readonly clock: () => number;
  /** In [0, 1): each quota's jitter past its reset. */
  readonly random: () => number;
  /** Lines, partitions and quotas kept, each. Defaults to 1,000. */
  readonly maxEntries?: number;
}

/** What the quotas of a request let it do: refuse, wait, or go, probing some and taking a unit of the others. */
type Decision =
  | Exclude<Reservation, { kind: 'go' }>
  | { readonly kind: 'go'; readonly probes: readonly Quota[]; readonly units: readonly Quota[] };

/** Adds `n` to `map`'s count of `id`, deleting the entry at zero. */
function add(map: Map<string, number>, id: string, n: number): void {
  const count = (map.get(id) ?? 0) + n;
  if (count > 0) map.set(id, count);
  else map.delete(id);
}

/** Puts `ids` first in `list` (most recent first), at most `max` kept. */
function teach(list: string[], ids: readonly string[], max: number): void {
  for (const id of [...ids].reverse()) {
    const at = list.indexOf(id);
    if (at >= 0) list.splice(at, 1);
    list.unshift(id);
  }
  if (list.length > max) list.length = max;
}

export class Pacer {
  private readonly lines = new Map<string, Line>();
  private readonly partitions = new Map<string, Partition>();
  private readonly quotas = new Map<string, Quota>();
  /** Attempts in flight per quota (an entry only while some are). */
  private readonly flying = new Map<string, number>();
  /** Units granted per quota whose requests have not left yet, waiting for their slots (an entry only while some are). */
  private readonly granted = new Map<string, number>();
  private readonly maxEntries: number;
  /** Orders what the pacer learns: a quota's spending and the first answers of new lines. */
  private seq = 0;

  constructor(private readonly options: PacerOptions) {
    this.maxEntries = options.maxEntries ?? 1000;
  }

  /** Attempts sent so far, everywhere: an attempt's number is this before it leaves. */
  attempts = 0;

  /** Lines, partitions and quotas kept, for tests of the bounds. */
  sizes(): { lines: number; partitions: number; quotas: number; flying: number; granted: number } {
    const { lines, partitions, quotas, flying, granted } = this;
    return { lines: lines.size, partitions: partitions.size, quotas: quotas.size, flying: flying.size, granted: granted.size };
  }

  /**
   * An attempt on `scope` leaves (every attempt, paced or not, retries too); returns what `landed` takes.
   * A new line's attempt counts against what new lines were last found answering to.
   */
  sent(scope: PacingScope): readonly string[] {
    this.attempts += 1;
    const line = this.lines.get(scope.id);
    const ids = (line?.quotas ?? this.partitions.get(scope.partitionId)?.evidence?.answers ?? []).slice();
    for (const id of ids) add(this.flying, id, 1);
    return ids;
  }

  /** An attempt ended (a response, or none), before its response is observed. */
  landed(ids: readonly string[]): void {
    for (const id of ids) add(this.flying, id, -1);
  }

  /**
   * A request granted `grant` leaves now: true when its units still stand. False when numbers that came
   * while it waited for its slot left fewer than had been granted (the server counted requests this
   * client had not sent yet): the grant is forsaken and the request asks again, so the requests granted
   * never outnumber what the server last said was left.
   */
  redeem(grant: Grant): boolean {
    if (grant.charges.every((c) => (this.quotas.get(c.quota.id)?.overdrawn ?? 0) === 0)) {
      for (const c of grant.charges) {
        add(this.granted, c.quota.id, -1);
        // A request left at its slot: the slots freed before it are behind it.
        const q = this.quotas.get(c.quota.id);
        if (q !== undefined) q.freedAt = undefined;
      }
      return true;
    }
    this.forsake(grant);
    return false;
  }

  /**
   * A request granted `grant` will not leave (aborted, or told to ask again by `redeem`): each unit goes
   * back (or pays off an overdraft) with its pacing slot (unless a later unit was paced after it), and
   * its ticket is settled, its units not given back a second time. (Before, the slots stayed taken: after
   * 17 calls aborted while paced, the next call waited 1.7 to 3.7 s, not one interval.)
   */
  forsake(grant: Grant): void {
    for (const c of grant.charges) {
      add(this.granted, c.quota.id, -1);
      const q = this.quotas.get(c.quota.id);
      if (q === undefined) continue;
      if (q.overdrawn > 0) q.overdrawn -= 1;
      else this.unitBack(q, c);
      // Calls aborted together are forsaken in the order they were granted: the slots go back once none waits.
      q.freedAt = Math.min(q.freedAt ?? Number.POSITIVE_INFINITY, c.nextAt);
      if (this.granted.has(q.id)) continue;
      q.nextAt = Math.min(q.nextAt, q.freedAt);
      q.freedAt = undefined;
    }
    const ticket = grant.ticket;
    if (ticket === undefined) return;
    ticket.charged = [];
    this.settled(ticket, 'none');
  }

  /** A unit taken of `q` goes back, its slot too unless a later unit was paced after it: the requests waiting on it ask again. */
  private unitBack(q: Quota, { nextAt, after }: Charge): void {
    if (q.nextAt === after) q.nextAt = nextAt;
    q.remaining += 1;
    if (q.remaining >= 1) q.spentSince = undefined;
    this.wake(q);
  }

  /**
   * Records what a response on `scope` said of each quota it reports (less the attempts still in flight
   * to it, and the units granted to requests still waiting for their slots), teaches its line and
   * partition those quotas, and wakes the requests waiting for new numbers.
   * A line's first answer is the partition's evidence of what new lines answer to. A response with
   * `Retry-After` but no quota numbers (nginx `limit_req`, many CDNs) says the line's unnamed quota is
   * spent until then, when it is a refusal (429, 503).
   */
  observe(scope: PacingScope, signal: RateLimitSignal, status: number): void {
    let items = (signal.policies ?? []).filter((p) => p.resetMs !== undefined);
    if (items.length === 0 && signal.retryAfterMs !== undefined && REFUSALS.has(status)) {
      items = [{ name: '', partition: undefined, remaining: 0, resetMs: signal.retryAfterMs, limit: undefined, windowMs: undefined }];
    }
    const first = !this.lines.has(scope.id);
    const line = this.line(scope);
    const part = this.partition(scope);
    const seq = ++this.seq;
    const ids = items.map((item) => {
      const id = `${scope.origin}\n${item.name}\n${item.partition === undefined ? `key:${scope.partition}` : `pk:${item.partition}`}`;
      this.record(id, item, status, seq);
      return id;
    });
    teach(line.quotas, ids, MAX_LINE_POLICIES);
    teach(part.quotas, ids, MAX_PARTITION_POLICIES);
    if (first) {
      const latest = ids.slice(0, MAX_LINE_POLICIES);
      const before = part.evidence?.latest;
      part.evidence = { answers: before === undefined ? [] : latest.filter((id) => before.includes(id)), latest, seq };
    }
    if (first || !part.heard) this.heard(part);
  }

  /** Keeps `item`'s numbers as quota `id`, replacing (and waking the waiters of) what was known. */
  private record(id: string, item: RateLimitItem, status: number, seq: number): void {
    const { clock, random, maxDelayMs } = this.options;
    const now = clock();
    const previous = this.quotas.get(id);
    const resetMs = item.resetMs ?? 0;
    const windowMs = item.windowMs ?? Math.max(previous?.windowMs ?? 0, resetMs);
    const quota = item.limit ?? Math.max(previous?.quota ?? 0, item.remaining + 1);
    // One pacing interval past the reset, within what maxDelayMs leaves above it (as the retry's jitter).
    const spread = Math.min(windowMs / Math.max(1, quota), Math.max(0, maxDelayMs - resetMs));
    const spent = item.remaining < 1 && REFUSALS.has(status);
    const granted = this.granted.get(id) ?? 0;
    const left = item.remaining - (this.flying.get(id) ?? 0) - granted;
    const remaining = Math.max(0, left);
    this.keep(this.quotas, id, {
      id,
      observedAt: this.attempts,
      heardAt: now,
      remaining,
      resetAt: now + resetMs,
      limit: item.limit,
      jitterMs: Math.floor(random() * spread),
      windowMs,
      quota,
      refusedWith: spent ? status : previous?.refusedWith,
      spentSince: remaining >= 1 ? undefined : previous !== undefined && previous.remaining < 1 ? previous.spentSince : seq,
      nextAt: previous?.nextAt ?? now,
      freedAt: previous?.freedAt,
      overdrawn: Math.min(granted, Math.max(0, -left)),
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
  }

  /**
   * A first attempt that left with a ticket is over: `'answered'` (a response from the server),
   * `'cached'` (a response a cache served, which tells nothing of the server), or `'none'` (no response:
   * a network error, an abort, or a grant forsaken before it left). A new line's charges on quotas its
   * line did not answer to are given back. A partition answered (or cached) is heard from: its new lines
   * no longer wait for a first contact. A quota it probed that a server's response did not renew (no
   * numbers for it) is unknown again, and nothing waits for it; a cached response leaves it as it was,
   * the next probe going once this one's PROBE_WAIT_MS is over. With no response, the next request
   * probes, alone (the partition's first contact, or each quota probed): before, an aborted probe let
   * every request waiting on it go at once (20 of 30 refused).
   */
  settled(ticket: PacingTicket, how: 'answered' | 'cached' | 'none' = 'answered'): void {
    if (ticket.done) return;
    ticket.done = true;
    const part = ticket.partition;
    if (part !== undefined) {
      if (ticket.kind === 'new') {
        part.flying = Math.max(0, part.flying - 1);
        this.giveBack(ticket);
      }
      if (how !== 'none') this.heard(part);
      else if (ticket.kind === 'first') {
        part.probeUntil = undefined;
        this.wake(part);
      }
    }
    if (how === 'cached') return;
    for (const q of ticket.probed) {
      if (this.quotas.get(q.id) !== q || q.probeUntil === undefined) continue;
      if (how === 'answered') this.forget(q.id, q);
      else {
        q.probeUntil = undefined;
        this.wake(q);
      }
    }
  }

  /** The units a new line took of quotas its line's answer did not name (an answer came, on it or a sibling). */
  private giveBack(ticket: PacingTicket): void {
    const line = this.lines.get(ticket.scope.id);
    if (line === undefined) return;
    for (const c of ticket.charged) {
      const q = c.quota;
      if (line.quotas.includes(q.id) || this.quotas.get(q.id) !== q) continue;
      this.unitBack(q, c);
    }
  }

  /**
   * What a request on `scope` may do now, reserving its unit of each quota it answers to when it may go;
   * `allowMs` is how much longer it may wait (what is left of `maxDelayMs`, and of its deadline). A line
   * heard from answers to its own quotas; a new line to what its partition's new lines were found to.
   */
  reserve(scope: PacingScope, allowMs: number): Reservation {
    const now = this.options.clock();
    const line = this.lines.get(scope.id);
    if (line === undefined) {
      const part = this.partitions.get(scope.partitionId);
      if (part === undefined || !part.heard) return this.firstContact(scope, part, now);
      return this.newLine(scope, part, now, allowMs);
    }
    this.keep(this.lines, scope.id, line);
    const d = this.decide(this.known(line.quotas), now, allowMs);
    if (d.kind !== 'go') return d;
    const { waitMs, charges } = this.commit(d, now);
    const ticket = d.probes.length > 0 ? this.ticket(scope, 'line', undefined, d.probes) : undefined;
    return { kind: 'go', waitMs, ticket, charges };
  }

  /**
   * A line not heard from, in a partition that was. Lines whose paths carry names (`/users/<login>`) are
   * new at every name, and answer to the quotas the lines before them did: a new line is held and charged
   * as a line answering to the quotas the last two first answers in its partition both named (`answers`;
   * a unit it was charged for is given back when its own answer names another), but held by a spent one
   * only when the latest first answer came after the spending. A spent quota that no first answer since
   * its spending has ruled out (named other quotas only) is unknown for new lines: they go one at a time
   * (the others wait for the new lines on their way, at most PROBE_WAIT_MS after the last left; with none
   * on its way, the request goes alone, as a probe). So a `search` spent by `/search` never holds
   * `/users/<login>` past one answer, while a spent `core` holds every new `/users/<login>` after one.
   * With no spent quota in the partition, nothing waits but the pacing of the quotas new lines answer to.
   */
  private newLine(scope: PacingScope, part: Partition, now: number, allowMs: number): Reservation {
    this.keep(this.partitions, scope.partitionId, part);
    const evidence = part.evidence;
    const held: Quota[] = [];
    let unknown = false;
    for (const q of this.known(new Set([...part.quotas, ...(evidence?.latest ?? [])]))) {
      const spent = q.remaining < 1 && now < q.resetAt + q.jitterMs;
      // Held by a spent quota only on evidence that came after the spending (two `/search/*` lines first,
      // then `search` spent: `/users/<login>` is not refused on that, it goes as a probe).
      const after = evidence !== undefined && evidence.seq > (q.spentSince ?? Number.NEGATIVE_INFINITY);
      if (evidence?.answers.includes(q.id) && (!spent || after)) held.push(q);
      else if (spent && !(after && !evidence?.latest.includes(q.id))) unknown = true;
    }
    const d = this.decide(held, now, allowMs);
    if (d.kind !== 'go') return d;
    const until = part.sentAt + PROBE_WAIT_MS;
    if (unknown && part.flying > 0 && now < until) return { kind: 'wait', waitMs: until - now, renewed: this.renewal(part) };
    part.flying += 1;
    part.sentAt = now;
    const { waitMs, charges } = this.commit(d, now);
    return { kind: 'go', waitMs, ticket: this.ticket(scope, 'new', part, d.probes, charges), charges };
  }

  /** The quotas of `ids` still kept. */
  private known(ids: Iterable<string>): Quota[] {
    const out: Quota[] = [];
    for (const id of ids) {
      const q = this.quotas.get(id);
      if (q !== undefined) out.push(q);
    }
    return out;
  }

  /** What `quotas` let a request do at `now`, changing nothing. */
  private decide(quotas: readonly Quota[], now: number, allowMs: number): Decision {
    const verdicts = quotas.map((q) => this.verdict(q, now, allowMs));
    let refusal: Verdict | undefined;
    for (const v of verdicts) if (v.kind === 'refuse' && (refusal?.kind !== 'refuse' || v.retryAfterMs > refusal.retryAfterMs)) refusal = v;
    if (refusal?.kind === 'refuse') return refusal;
    const waits = quotas.filter((_, i) => verdicts[i]?.kind === 'wait');
    if (waits.length > 0) {
      const waitMs = Math.max(...verdicts.map((v) => (v.kind === 'wait' ? v.waitMs : 0)));
      const renewed = waits.map((q) => this.renewal(q));
      return { kind: 'wait', waitMs, renewed: renewed.length === 1 ? renewed[0] : Promise.race(renewed) };
    }
    return {
      kind: 'go',
      probes: quotas.filter((_, i) => verdicts[i]?.kind === 'probe'),
      units: quotas.filter((_, i) => verdicts[i]?.kind === 'unit'),
    };
  }

  /** Every quota lets it go: probes the ones whose reset passed, takes a unit of the others; returns the paced wait. */
  private commit(d: Extract<Decision, { kind: 'go' }>, now: number): { waitMs: number; charges: Charge[] } {
    for (const q of d.probes) q.probeUntil = now + PROBE_WAIT_MS;
    let waitMs = 0;
    const charges: Charge[] = [];
    for (const q of d.units) {
      const nextAt = q.nextAt;
      waitMs = Math.max(waitMs, this.take(q, now));
      add(this.granted, q.id, 1);
      charges.push({ quota: q, nextAt, after: q.nextAt });
    }
    return { waitMs, charges };
  }

  private ticket(
    scope: PacingScope,
    kind: PacingTicket['kind'],
    partition: Partition | undefined,
    probed: readonly Quota[] = [],
    charged: readonly Charge[] = [],
  ): PacingTicket {
    return { scope, kind, partition, probed, charged, done: false };
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
    if (q.remaining < 1) q.spentSince ??= ++this.seq;
    if (q.remaining + 1 > threshold) return 0;
    const at = Math.max(now, q.nextAt);
    q.nextAt = at + (q.resetAt - at) / (q.remaining + 1);
    return Math.ceil(at - now);
  }

  /**
   * A partition not heard from (a new origin, or a new credential): its first request probes alone, the
   * others (on any line) wait for its answer, at most PROBE_WAIT_MS, so a first burst is paced too.
   */
  private firstContact(scope: PacingScope, known: Partition | undefined, now: number): Reservation {
    const part = known ?? this.partition(scope);
    if (part.probeUntil === undefined || now >= part.probeUntil) {
      part.probeUntil = now + PROBE_WAIT_MS;
      return { kind: 'go', waitMs: 0, ticket: this.ticket(scope, 'first', part), charges: [] };
    }
    return { kind: 'wait', waitMs: part.probeUntil - now, renewed: this.renewal(part) };
  }

  /** The line of `scope`, made when missing. */
  private line(scope: PacingScope): Line {
    const known = this.lines.get(scope.id);
    if (known !== undefined) return known;
    const line: Line = { scope, quotas: [] };
    this.keep(this.lines, scope.id, line);
    return line;
  }

  /** The partition of `scope`, made when missing. */
  private partition(scope: PacingScope): Partition {
    const known = this.partitions.get(scope.partitionId);
    if (known !== undefined) return known;
    const part: Partition = {
      heard: false,
      probeUntil: undefined,
      quotas: [],
      evidence: undefined,
      flying: 0,
      sentAt: 0,
      renewed: undefined,
    };
    this.keep(this.partitions, scope.partitionId, part);
    return part;
  }

  /** `part` answered (or its first contact ended): new lines no longer wait for a first contact, and those waiting ask again. */
  private heard(part: Partition): void {
    part.heard = true;
    part.probeUntil = undefined;
    this.wake(part);
  }

  /** Settles when `holder` changes (new numbers, forgotten, a probe's end, new evidence). */
  private renewal(holder: { renewed: Deferred | undefined }): Promise<void> {
    holder.renewed ??= deferred();
    return holder.renewed.promise;
  }

  /** Wakes the requests waiting on `holder`, to ask again. */
  private wake(holder: { renewed: Deferred | undefined }): void {
    holder.renewed?.resolve();
    holder.renewed = undefined;
  }

  private forget(id: string, q: Quota): void {
    this.quotas.delete(id);
    q.renewed?.resolve();
  }

  /** Sets `key` last in `map` (the most recently used), forgetting the oldest entry when `maxEntries` are kept. */
  private keep<V extends Line | Partition | Quota>(map: Map<string, V>, key: string, value: V): void {
    map.delete(key);
    if (map.size >= this.maxEntries) {
      const oldest = map.entries().next().value;
      if (oldest !== undefined) {
        map.delete(oldest[0]);
        const evicted: Line | Partition | Quota = oldest[1];
        if ('renewed' in evicted) evicted.renewed?.resolve();
      }
    }
    map.set(key, value);
  }
}
