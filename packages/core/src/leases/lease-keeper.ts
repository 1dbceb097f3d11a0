/**
 * @module The limiter's side of concurrency leases, after the store has decided: an admitted decision of
 * a plan with concurrency policies gets `release` and `renew` (bound to the store that took the lease:
 * the limiter's, or the local fallback's), the lease gauges (`tollgate.leases.active`,
 * `tollgate.queue.length`) count what this limiter holds, a release wakes the key's queue
 * (lease-queue.ts), and a failed release or renewal is logged once per run of failures (the lease then
 * ends by its lease time at the latest). limiter/ decides and builds decisions; this module keeps what they hold.
 *
 * Three guarantees live here, whatever the adapter does:
 * - A lease always ends: renewal stops `maxLeaseMs` after the lease was granted (the shortest of the
 *   plan's concurrency policies), so a handler that never answers on an open connection holds its slot
 *   at most that long.
 * - A lease is never revived over the limit: a renewal that comes after its deadline (the process stalled
 *   longer than leaseMs / 2) takes the slot again only when it is still free (`Store.renew`, `renewLate`),
 *   else the lease has ended and its renewals answer false; one ended by `limiter.reset(key)` is never
 *   revived, in any store (`ending`).
 * - Leases survive a store that lost them: in a store that can lose state (`Store.restore`: RedisStore,
 *   on a restart or a failover) every held lease is known here, renewals put a lost lease back, and once
 *   the store lost some (its connection closed, a renewal found a lease gone, or a grant counted fewer
 *   leases in use on its key than this limiter holds there: `lostBeside`) the leases still held
 *   are put back before this limiter grants a new one (`restoring`); a lease whose call straddled a
 *   connection event may have been granted before they were back, and is asked for again (`epoch`,
 *   leased-decisions.ts); a release the store could not take is sent again first; a lease the failure
 *   mode granted in an outage goes into the store with them (`carry`), so it counts there until it ends.
 *   Per node: a new lease waits only when its key's node may lack a held lease (`missingAll` after a
 *   reconnect, else `missingOn`), so a Cluster master that cannot take its leases back keeps its fault.
 *   A restore the store does not answer holds up one decision, at most RESTORE_WAIT_MS. One limiter alone
 *   then never runs more than `limit`; limiters in several processes sharing a key may, until each has reconnected (or
 *   renewed, within leaseMs / 2), run at most `limit` plus what the others held and had not put back yet.
 */
import { MAX_LEASE_RETRY_MS } from '../algorithms/concurrency.js';
import { monotonicClock } from '../clock.js';
import { costUnits, DecisionImpl, Result } from '../decision.js';
import { seeDocs } from '../errors.js';
import { nodesIn } from '../failure/store-guard.js';
import { isPromiseLike } from '../internal/promise.js';
import { LineThrottle, type Logger, safeLog } from '../logging.js';
import { type InFlightSource, reportInFlight } from '../observability/in-flight.js';
import type { CompiledPlan } from '../plans/compiled-plan.js';
import { type ConnectionEvent, keyAt, type Store, type StoreKey, type StorePlan, type StoreResult } from '../stores/store.js';
import type { Decision } from '../types.js';
import { type Held, HeldLeases } from './held-leases.js';
import { LeaseQueues } from './lease-queue.js';

/** How long a decision waits for the held leases to be put back before it goes on without them. */
export const RESTORE_WAIT_MS = 100;

/** At most one ERR_RL_STORE_FAILED lease line per this long (limiter clock), as for a store's outages. */
const LEASE_LOG_INTERVAL_MS = 10_000;

/** How a restore a decision waited for ended (LeaseKeeper.restoring). */
export type Restored = 'back' | 'late' | { readonly error: unknown };
/**
 * After a restore that failed (the store still down, or answering errors), the next is tried no sooner
 * than this, doubled after each failure in a row up to RESTORE_RETRY_MAX_MS: a node that answers every
 * call with an error (OOM, READONLY) is not sent every held lease 20 times a second.
 */
const RESTORE_RETRY_MS = 50;
/** How long the nodes of the missing leases, once read, are trusted (LeaseKeeper.missing). */
const NODES_READ_MS = 100;
const RESTORE_RETRY_MAX_MS = 1_000;

/**
 * Releases sent this long before a connection event are sent again after it, on the new connection. A
 * Sentinel failover promotes the replica, and only then do the clients hear of it (the old master is told
 * to follow the new one and drops its clients, or `+switch-master` reaches them): in that gap, about a
 * second with three sentinels, a release the old master acknowledged never reaches the new one, and its
 * lease would hold a slot there, held by no request, until its deadline. A second release of a lease is
 * harmless (lease ids are never reused). Sent at most RELEASE_REPLAY_MAX of them, the latest.
 */
export const RELEASE_REPLAY_MS = 5_000;
const RELEASE_REPLAY_MAX = 10_000;

/** Records `p`, a restore of `held` on its way, until it settles. */
function puttingBack<T>(held: Held, p: Promise<T>): Promise<T> {
  held.putBack = p;
  const done = () => {
    if (held.putBack === p) held.putBack = undefined;
  };
  p.then(done, done);
  return p;
}

/** Whether a call for `node` (one node, or several joined by '+') goes to any of `nodes`. */
function reaches(node: string, nodes: ReadonlySet<string>): boolean {
  return nodesIn(node).some((n) => nodes.has(n));
}

/** Records `release`, the give-back of an abandoned lease, among `kept.givingBack` until it lands. */
function landing(kept: StoreLeases, release: PromiseLike<unknown>): void {
  const landed: Promise<void> = Promise.resolve(release).then(none, none);
  kept.givingBack.add(landed);
  void landed.then(() => kept.givingBack.delete(landed));
}

/** Records that the node of `held` may lack it (see `StoreLeases.missingOn`). */
function markMissing(kept: StoreLeases, held: Held): void {
  kept.missingOn.add(held);
  kept.missingNodes = undefined;
}

/** `call()` as a promise: what it returns, or its synchronous throw as a rejection (called now, not a microtask later). */
function attempt<T>(call: () => T | PromiseLike<T>): Promise<T> {
  try {
    return Promise.resolve(call());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** What this limiter holds in one such store, and whether the store may have lost it. */
class StoreLeases {
  readonly held = new HeldLeases();
  /** Released by their requests while the store could not be told (down, or the call failed): told again with the next restore. */
  readonly unreleased = new Set<Held>();
  /** Releases sent, each with when, in the last RELEASE_REPLAY_MS: told again after a connection event. */
  readonly recent = new Map<Held, number>();
  /**
   * Give-backs of leases no decision holds (`abandon`) on their way, each settling when it lands: a restore
   * ends only once those sent before it have, since the request that gave one up asks again after the
   * restore. A give-back that met NOSCRIPT runs again behind later calls; the restores, one call per lease
   * and each meeting NOSCRIPT too, used to end after it by chance, and a batched restore with its script
   * loaded first ends before it (the ask again then found its own given-up lease still counted).
   */
  readonly givingBack = new Set<Promise<void>>();
  /** When `held` is next swept of leases past their deadline (never released: a lost `release`). */
  sweepAt = 1024;
  /** The store may have lost some, or hold some this limiter released: new leases wait for `restoring`. */
  lost = false;
  /**
   * The store may lack any lease this limiter holds (a reconnect), until a restore that listed them all
   * ends: a new lease in the store beside a missing one could run over the limit. (A release not told yet
   * leaves the store with one too many: `lost`, not this.)
   */
  missingAll = false;
  /**
   * Leases whose node may lack leases this limiter holds: found gone by a renewal (a Cluster failover),
   * carried in by the failure mode, or not put back by the last restore (their node failing). A new lease
   * waits only when its key is served by the node of one of them (`nodeOf`, read now: after a failover the
   * slot's new master), so a failing node keeps its fault: the other nodes' keys go on to the store.
   */
  missingOn = new Set<Held>();
  /** The nodes of `missingOn` as `missing` last read them, and when: read again after a change or NODES_READ_MS. */
  missingNodes: { readonly nodes: ReadonlySet<string>; readonly at: number } | undefined;
  /**
   * Renewals that found their lease gone, and leases the failure mode carried in: a restore started before
   * one of them does not mark their node whole (it did not send that lease).
   */
  losses = 0;
  /** Leases renewals found gone and put back since the last WRN_RL_LEASES_RESTORED line: they count in it. */
  renewedBack = 0;
  /**
   * Moves on with every connection event (closed, ready): a call sent in an earlier epoch and answered in
   * a later one may have run on a server that had lost the held leases, before they were put back.
   */
  epoch = 0;
  /** From a 'lost' until the next 'ready' (the connection is down): settles with that 'ready'. */
  down: { readonly promise: Promise<void>; readonly resolve: () => void } | undefined;
  /** Putting the held leases back ('restore'), until it settles. */
  restoring: Promise<void> | undefined;
  /** `restoring` once a decision waited RESTORE_WAIT_MS for it in vain: the next ones do not wait for it. */
  stalled: Promise<void> | undefined;
  /** After a failed restore: no other before this time. */
  retryAt = 0;
  /** What the last restore failed with; undefined once one succeeds. */
  restoreError: unknown = undefined;
  /** The wait after the next failed restore. */
  retryMs = RESTORE_RETRY_MS;
  unwatch: (() => void) | undefined;

  constructor(readonly store: Store & Required<Pick<Store, 'restore'>>) {}
}

/** Why the leases of `kept` are not all back after a restore ended: its error, or `'late'`. */
function unrestored(kept: StoreLeases): Exclude<Restored, 'back'> {
  return kept.restoreError === undefined ? 'late' : { error: kept.restoreError };
}

/** Records the release of `held`, sent at `now`, among `kept`'s recent ones (RELEASE_REPLAY_MS), dropping those too old or too many. */
function sentRelease(kept: StoreLeases, held: Held, now: number): void {
  const recent = kept.recent;
  // Moved to the end: the map stays in the order the releases were sent.
  recent.delete(held);
  recent.set(held, now);
  for (const [h, at] of recent) {
    if (now - at <= RELEASE_REPLAY_MS && recent.size <= RELEASE_REPLAY_MAX) break;
    recent.delete(h);
  }
}

/** The plan's lease bounds: the shortest lease time and max lease life of its concurrency policies. */
function leaseBounds(cp: CompiledPlan): { leaseMs: number; maxLeaseMs: number } {
  let leaseMs = Number.POSITIVE_INFINITY;
  let maxLeaseMs = Number.POSITIVE_INFINITY;
  for (const p of cp.all) {
    if (p.algorithm !== 'concurrency') continue;
    leaseMs = Math.min(leaseMs, p.windowMs);
    maxLeaseMs = Math.min(maxLeaseMs, p.maxLeaseMs ?? 5 * p.windowMs);
  }
  return { leaseMs, maxLeaseMs };
}

/** Settles a chained promise with nothing, whatever it settled with. */
const none = (): void => undefined;

/**
 * `p`, or `ms`, whichever comes first (then `onTimeout`): true when `p` settled in time. Never rejects
 * (`p` never does).
 */
function atMostRestoreWait(p: Promise<void>, ms: number, onTimeout?: () => void): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => {
      onTimeout?.();
      resolve(false);
    }, ms);
    void p.then(() => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

/** What the lease keeper needs of its limiter. */
export interface LeaseKeeperParts {
  readonly logger: Logger;
  readonly storeKind: string;
  /** The limiter's clock. */
  readonly now: () => number;
  /** Whether a warning is on (`validate`); every one by default. */
  readonly warns?: (code: 'WRN_RL_LEASES_RESTORED') => boolean;
  /** Tells the watchdog of a store call for `key` nobody waits for (StoreGuard.aside); returns the call. */
  readonly aside?: <T>(key: StoreKey, call: T) => T;
  /** The limiter's `name`, the `tollgate.limiter` of its in-flight gauges; undefined without one. */
  readonly limiter?: string | undefined;
  /** The store node that serves `key` now (StoreGuard.nodeOfKey): where a lease found missing keeps its fault. */
  readonly nodeOf?: (key: StoreKey) => string;
}

export class LeaseKeeper {
  /** Requests waiting for a lease in this process (concurrency policies with a queue). */
  readonly queues = new LeaseQueues();
  /** A release or renewal failed (logged, or counted in `notLogged`); cleared by the next that succeeds. */
  private failing = false;
  /** ERR_RL_STORE_FAILED lease lines: at most one per LEASE_LOG_INTERVAL_MS, counting the runs of failures left out. */
  private readonly lines = new LineThrottle(LEASE_LOG_INTERVAL_MS);
  /** Per concurrency policy name: leases held by this limiter's decisions, and requests in its queues. */
  private readonly inFlight = new Map<string, { leases: number; queued: number }>();
  /** Held here: `reportInFlight` keeps its source weakly. */
  private readonly source: InFlightSource = () =>
    [...this.inFlight].map(([policy, n]) => ({ policy, limiter: this.limiter, leases: n.leases, queued: n.queued }));
  private readonly stopReporting: (() => void) | undefined;
  /** Per store that can lose leases: what this limiter holds there. */
  private readonly stores = new Map<Store, StoreLeases>();
  /** The leases held in stores that keep nothing here (`keepUnkept`), for `ending`. */
  private readonly unkept = new Set<Held>();
  /** When `unkept` is next swept of leases past their last renewal. */
  private unkeptSweepAt = 1024;
  /** Per plan: its lease bounds. */
  private readonly bounds = new Map<CompiledPlan, { leaseMs: number; maxLeaseMs: number }>();

  private readonly logger: Logger;
  private readonly storeKind: string;
  private readonly now: () => number;
  private readonly warns: (code: 'WRN_RL_LEASES_RESTORED') => boolean;
  private readonly aside: <T>(key: StoreKey, call: T) => T;
  private readonly limiter: string | undefined;
  private readonly nodeOf: (key: StoreKey) => string;

  constructor(plans: ReadonlyMap<string, CompiledPlan>, parts: LeaseKeeperParts) {
    this.logger = parts.logger;
    this.storeKind = parts.storeKind;
    this.now = parts.now;
    this.warns = parts.warns ?? (() => true);
    this.aside = parts.aside ?? ((_key, call) => call);
    this.limiter = parts.limiter;
    this.nodeOf = parts.nodeOf ?? (() => '');
    for (const cp of plans.values()) {
      for (const p of cp.all) if (p.algorithm === 'concurrency') this.inFlight.set(p.name, { leases: 0, queued: 0 });
    }
    this.stopReporting = this.inFlight.size > 0 ? reportInFlight(this.source) : undefined;
  }

  /**
   * Gives `d`, admitted with lease `lease` of `key` in `store` under `plan`, its `release` (once; wakes
   * the queues `queues` names, read only when someone waits in some queue) and `renew`. `carry`: the
   * limiter's store and plan, when the failure mode granted the lease in its own `store` during an outage:
   * the lease is put into that store too once it answers (with the held leases, before a new lease there),
   * so the requests an outage admitted still count after it; released and renewed there from then on.
   */
  hold(
    d: DecisionImpl,
    cp: CompiledPlan,
    key: StoreKey,
    lease: number,
    store: Store,
    plan: StorePlan,
    queues: () => readonly string[],
    carry?: { readonly store: Store; readonly plan: StorePlan },
  ): void {
    let released = false;
    this.count(cp, 'leases', 1);
    const { leaseMs, maxLeaseMs } = this.boundsOf(cp);
    const at = this.now();
    const held: Held = {
      key,
      plan,
      lease,
      renewUntil: at + maxLeaseMs - leaseMs,
      leaseMs,
      until: at + leaseMs,
      inStore: true,
      putBack: undefined,
    };
    const kept = this.keep(store, held);
    if (kept === undefined) this.keepUnkept(held);
    const carried = carry === undefined ? undefined : this.carry(carry.store, { ...held, plan: carry.plan, inStore: false });
    const isReleased = () => released;
    d.release = () => {
      if (released) return;
      released = true;
      this.count(cp, 'leases', -1);
      if (kept === undefined) this.unkept.delete(held);
      const landing =
        kept === undefined
          ? this.sending(() => this.aside(key, store.release?.(key, plan, lease, this.now())))
          : this.releaseKept(kept, held);
      if (carried !== undefined) this.releaseKept(carried.kept, carried.held);
      if (this.queues.idle) return;
      for (const id of queues()) this.queues.wake(id);
      // The waiter's attempt goes right behind the release; but a release that met NOSCRIPT (a restarted
      // or flushed Redis) runs again behind it, and the attempt was refused: a waiter back to waiting when
      // the release lands is woken again (one still on its way was sent after the release and sees it).
      const again = () => {
        if (!this.queues.idle) for (const id of queues()) this.queues.wake(id, true);
      };
      landing?.then(again, again);
    };
    d.renew = () => {
      if (released) return false;
      const now = this.now();
      // Past its life: renewal stops and the lease ends by its last deadline (a handler that never answers).
      // Ended by a reset, or by a late renewal that found its slot taken: never revived (`Held.until`).
      if (now > held.renewUntil || held.until === Number.NEGATIVE_INFINITY) {
        if (kept === undefined) this.unkept.delete(held);
        else kept.held.delete(held);
        carried?.kept.held.delete(carried.held);
        return false;
      }
      if (carried !== undefined) this.renewCarried(carried.kept, carried.held, now, isReleased);
      // Past its deadline (the process stalled longer than leaseMs / 2): it takes its slot again if it fits.
      const answer = this.send(() =>
        kept === undefined
          ? this.renewUnkept(store, held, now)
          : now >= held.until
            ? this.renewLate(kept, held, now, isReleased)
            : this.renewKept(kept, held, now),
      );
      return typeof answer === 'boolean' ? answer : answer !== 'failed';
    };
  }

  /**
   * Records `held`, a lease in a store that keeps nothing here (a MemoryStore), until it ends, so that
   * `ending` finds it: a reset ends it for good (its renewal would take the slot again otherwise). Those
   * past their last renewal, whose renewals answer false anyway, are swept as `keep` sweeps.
   */
  private keepUnkept(held: Held): void {
    this.unkept.add(held);
    if (this.unkept.size < this.unkeptSweepAt) return;
    const now = this.now();
    for (const h of this.unkept) if (now > h.renewUntil) this.unkept.delete(h);
    this.unkeptSweepAt = Math.max(1024, 2 * this.unkept.size);
  }

  /** Renews `held` in `store` (one that keeps nothing here); an answer false ends it (`Held.until`). */
  private renewUnkept(store: Store, held: Held, now: number): boolean | Promise<boolean> {
    const answer = this.aside(held.key, store.renew?.(held.key, held.plan, held.lease, now)) ?? false;
    const end = (live: boolean): boolean => {
      if (!live) {
        held.until = Number.NEGATIVE_INFINITY;
        this.unkept.delete(held);
      }
      return live;
    };
    return isPromiseLike(answer) ? answer.then(end) : end(answer);
  }

  /**
   * A renewal of `held` past its deadline: the lease ended in the store, where another request may have
   * its slot. `Store.renew` takes the slot again only when it fits, never over the limit (restore, which
   * puts a lease back whatever the count, would run one over it). Taken: held as before. Refused: the
   * lease has ended, and later renewals answer false without a call. `released`: whether its request
   * released it meanwhile (then it is held no more, whatever the answer).
   */
  private renewLate(kept: StoreLeases, held: Held, now: number, released: () => boolean): Promise<boolean> {
    const answer = this.aside(held.key, kept.store.renew?.(held.key, held.plan, held.lease, now)) ?? false;
    return puttingBack(held, Promise.resolve(answer)).then((taken) => {
      // Ended meanwhile by a reset (which ran after it in the store) or its release: not held again.
      if (held.until === Number.NEGATIVE_INFINITY || released()) return taken;
      if (taken) {
        held.until = Math.max(held.until, now + held.leaseMs);
        kept.held.add(held);
      } else {
        held.until = Number.NEGATIVE_INFINITY;
        kept.held.delete(held);
        kept.missingOn.delete(held);
      }
      return taken;
    });
  }

  /** Records `held`, granted by the failure mode, as held in `store` (when it can lose leases): put back by the next restore. */
  private carry(store: Store, held: Held): { kept: StoreLeases; held: Held } | undefined {
    const kept = this.keep(store, held);
    if (kept === undefined) return undefined;
    kept.lost = true;
    markMissing(kept, held);
    // A restore on its way (stalled in a paused Redis, say) did not list this lease: it must not mark the
    // store whole when it ends, or the lease never reaches the store and the limiter runs over its limit.
    kept.losses += 1;
    return { kept, held };
  }

  /** A carried lease was renewed in the failure mode's store: in the limiter's store too once it may be there, errors logged. */
  private renewCarried(kept: StoreLeases, held: Held, now: number, released: () => boolean): void {
    // Ended by a reset, or by a late renewal refused: never revived.
    if (held.until === Number.NEGATIVE_INFINITY) return;
    if (!held.inStore) {
      held.until = now + held.leaseMs;
      return;
    }
    this.send(() => (now >= held.until ? this.renewLate(kept, held, now, released) : this.renewKept(kept, held, now)));
  }

  /**
   * Before a new lease in `store`: undefined when the store holds every lease this limiter holds there,
   * else a promise that settles once the restore ends: `'back'` when they all are; `'late'` after
   * RESTORE_WAIT_MS (a store that does not answer is the failure mode's business, not a reason to wait
   * longer); or the restore's error when it failed. A restore that ends in time with a lease still missing
   * (found gone, or carried in, while it ran) is followed by one more; still missing after it: `'late'`.
   * Anything but `'back'` is answered by the failure mode: a new lease in the store beside a missing one
   * could run over the limit. So while leases are missing after a failed restore, until its backoff ends,
   * the answer is at once: that restore's error. (While a restore stalls, new leases go to the store: a
   * restore that never settles must not keep every lease in the failure mode.) A release not told yet
   * (the store holds one too many) lets new leases go to the store.
   */
  restoring(store: Store, node: string): Promise<Restored> | undefined {
    const kept = this.stores.get(store);
    if (kept === undefined || !kept.lost) return undefined;
    let restoring = kept.restoring;
    if (restoring === undefined) {
      if (this.now() < kept.retryAt) return this.missing(kept, node) ? Promise.resolve(unrestored(kept)) : undefined;
      restoring = this.restore(kept);
    } else if (restoring === kept.stalled) return undefined;
    return this.restored(kept, node, restoring, monotonicClock() + RESTORE_WAIT_MS, true);
  }

  /**
   * `restoring`'s wait for `waited`, and for one more restore when `again` and leases of `node` are still
   * missing: both within one RESTORE_WAIT_MS (`until`, on the monotonic clock, as the timers run): a slow
   * store whose restores each take most of it (new leases carried in meanwhile) held a decision twice that.
   */
  private restored(kept: StoreLeases, node: string, waited: Promise<void>, until: number, again: boolean): Promise<Restored> {
    return atMostRestoreWait(waited, Math.max(0, until - monotonicClock()), () => {
      kept.stalled = waited;
    }).then((settled) => {
      // Nothing of `node` missing (only a release not told yet, or leases of another node): the store decides.
      if (!this.missing(kept, node)) return 'back';
      if (!settled) return 'late';
      if (kept.restoreError === undefined && again && kept.restoring === undefined && monotonicClock() < until)
        return this.restored(kept, node, this.restore(kept), until, false);
      return unrestored(kept);
    });
  }

  /**
   * Whether `node` may lack a lease this limiter holds in `kept.store` (see `missingOn`). The nodes of the
   * missing leases are read once per change, and again after NODES_READ_MS (a failover moves a slot): an
   * outage that carries in thousands of leases does not make each decision read thousands of keys' nodes.
   */
  private missing(kept: StoreLeases, node: string): boolean {
    if (kept.missingAll) return true;
    if (kept.missingOn.size === 0) return false;
    const now = this.now();
    let read = kept.missingNodes;
    if (read === undefined || now - read.at >= NODES_READ_MS || now < read.at) {
      read = { nodes: this.nodesOf(kept.missingOn), at: now };
      kept.missingNodes = read;
    }
    return reaches(node, read.nodes);
  }

  /** The nodes that serve the keys of `leases` now. */
  private nodesOf(leases: ReadonlySet<Held>): Set<string> {
    return new Set([...leases].flatMap((h) => nodesIn(this.nodeOf(h.key))));
  }

  /**
   * While `store`'s connection is down (closed and not ready again): a promise that settles when it is
   * ready, at most RESTORE_WAIT_MS later; else undefined. A lease given up because it was granted across
   * a connection event is asked for again after this (node-redis answers the commands it sent first on
   * the new connection before it reports 'ready', and refuses new ones until then).
   */
  reconnecting(store: Store): Promise<boolean> | undefined {
    const down = this.stores.get(store)?.down;
    return down === undefined ? undefined : atMostRestoreWait(down.promise, RESTORE_WAIT_MS);
  }

  /**
   * Ends `lease` of `cp` without a decision holding it, best effort and silently: its call was judged
   * failed (silent past storeTimeoutMs) or its grant came across a connection event, but it may have taken
   * the lease, so a slow or stale reply does not hold a slot for leaseMs. Sent now, and again once
   * `applied` (the call, when it is still on its way) settles: it may run after a release sent after it
   * (ioredis' Cluster sends a command again after CLUSTERDOWN or a closed connection, for up to
   * `maxRedirections` tries; an EVALSHA that met NOSCRIPT on a restarted node goes again after SCRIPT
   * LOAD, behind calls sent later), and once it settled it has run or never will (a probe: one lease in
   * two Cluster master restarts stayed held by no request for leaseMs). A second release is harmless
   * (lease ids are never reused). When the store cannot be told, a store that can lose leases is told
   * again before the next lease (as `release` is), since the call may have run before the connection went.
   */
  abandon(
    store: Store,
    cp: CompiledPlan,
    key: StoreKey,
    plan: StorePlan,
    lease: number,
    now: number,
    applied?: PromiseLike<unknown>,
  ): void {
    const kept = this.watched(store);
    const { leaseMs } = this.boundsOf(cp);
    const held: Held = { key, plan, lease, renewUntil: now, leaseMs, until: this.now() + leaseMs, inStore: true, putBack: undefined };
    const untold = () => {
      if (kept === undefined) return;
      kept.unreleased.add(held);
      kept.lost = true;
    };
    const tell = (at: number) => {
      try {
        const pending = this.aside(key, store.release?.(key, plan, lease, at));
        if (isPromiseLike(pending)) {
          pending.then(undefined, untold);
          if (kept !== undefined) landing(kept, pending);
        }
        if (kept !== undefined) sentRelease(kept, held, this.now());
      } catch {
        untold();
      }
    };
    tell(now);
    if (applied === undefined) return;
    const again = () => {
      // A call that ran late took its lease then: it lives leaseMs from now, so an untold release is sent again until then.
      held.until = this.now() + leaseMs;
      tell(this.now());
    };
    applied.then(again, again);
  }

  /** Adds `n` to the waiters of the queueing concurrency policies of `cp`. */
  countQueued(cp: CompiledPlan, n: number): void {
    this.count(cp, 'queued', n);
  }

  /**
   * `limiter.reset(key)` is about to end the leases of `key` in the store (as a MemoryStore's reset
   * does): lists those held now, and returns what ends them here once the store's reset is done. They are
   * then held no more, so no restore puts them back and no renewal revives them (it answers false, in a
   * MemoryStore too, where it would find the slot free and take it again); a release still tells the
   * store, where it ends nothing. A lease granted while the reset was on its way
   * (a plan's reset after another's) is not listed: it came after the reset. Before, a Redis limiter found
   * fewer leases in the store than it held after a reset and put them back.
   */
  ending(key: string): () => void {
    const of = (h: Held) => h.plan.policies.some((p, i) => p.algorithm === 'concurrency' && keyAt(h.key, i) === key);
    const listed: [StoreLeases | undefined, Held][] = [];
    for (const kept of this.stores.values()) {
      for (const h of kept.held) if (of(h)) listed.push([kept, h]);
    }
    for (const h of this.unkept) if (of(h)) listed.push([undefined, h]);
    return () => {
      for (const [kept, h] of listed) {
        h.until = Number.NEGATIVE_INFINITY;
        if (kept === undefined) {
          this.unkept.delete(h);
          continue;
        }
        kept.held.delete(h);
        kept.missingOn.delete(h);
      }
    };
  }

  close(): void {
    this.queues.close();
    this.stopReporting?.();
    for (const kept of this.stores.values()) kept.unwatch?.();
  }

  private boundsOf(cp: CompiledPlan): { leaseMs: number; maxLeaseMs: number } {
    let b = this.bounds.get(cp);
    if (b === undefined) {
      b = leaseBounds(cp);
      this.bounds.set(cp, b);
    }
    return b;
  }

  /**
   * The connection epoch of `store` (0 for a store that cannot lose leases): a lease whose call was sent
   * in another epoch than the one it is answered in is given up and asked for again, after the held leases
   * are back. A client may send, after a reconnect and before anything else, commands it took while its
   * dead socket was not yet known to be dead (node-redis' write queue, ioredis' offline queue), and
   * ioredis reports 'ready' a tick after it sends again: such a lease was granted on a server that did not
   * hold this limiter's leases yet.
   */
  epoch(store: Store): number {
    return this.watched(store)?.epoch ?? 0;
  }

  /** What this limiter holds in `store` when the store can lose it (`restore`); the first time, watches its connection. */
  private watched(store: Store): StoreLeases | undefined {
    if (store.restore === undefined) return undefined;
    let kept = this.stores.get(store);
    if (kept === undefined) {
      const k = new StoreLeases(store as StoreLeases['store']);
      const connection = store.watchConnection?.((event) => this.connection(k, event));
      const nodes = store.watchNodeLoss?.((node) => this.nodeLost(k, node));
      k.unwatch = () => {
        connection?.();
        nodes?.();
      };
      this.stores.set(store, k);
      kept = k;
    }
    return kept;
  }

  /** Records `held` when `store` can lose it. */
  private keep(store: Store, held: Held): StoreLeases | undefined {
    const kept = this.watched(store);
    if (kept === undefined) return undefined;
    kept.held.add(held);
    if (kept.held.size >= kept.sweepAt) {
      const now = this.now();
      for (const h of kept.held) if (h.until < now) kept.held.delete(h);
      kept.sweepAt = Math.max(1024, 2 * kept.held.size);
    }
    return kept;
  }

  /**
   * Whether `r`, the store's answer granting a lease of `key` under `cp` on `node`, says the store lost
   * leases this limiter holds there (fewer in use than held: a `FLUSHALL`, a Cluster master restarted while
   * nothing was sent to it, which no connection event tells of). If so, the leases held on that node are
   * missing and go back before a new lease there (`restoring`), once the caller gave up the one just
   * granted (its release goes first, so the store never holds it beside them).
   */
  lostBeside(store: Store, cp: CompiledPlan, key: StoreKey, r: StoreResult, node: string): boolean {
    const kept = this.stores.get(store);
    if (kept === undefined || !kept.held.fewerThanHeld(key, cp.storePlan, cp.all, r, this.now())) return false;
    for (const master of nodesIn(node)) this.markMissingOn(kept, master);
    kept.lost = true;
    return true;
  }

  /**
   * A master of a Redis Cluster lost its keys (a limiter on the store found its mark gone there:
   * Store.watchNodeLoss), though no call of this limiter may have seen it fail: the leases held there are
   * missing, and go back before a new lease there, as after a renewal that found one gone.
   */
  private nodeLost(kept: StoreLeases, node: string): void {
    if (!this.markMissingOn(kept, node) || kept.lost) return;
    kept.lost = true;
    if (kept.restoring === undefined) this.restore(kept);
  }

  /** Marks the leases held on `node` missing (`markMissing`); false when none is held there. */
  private markMissingOn(kept: StoreLeases, node: string): boolean {
    let some = false;
    for (const h of kept.held) {
      if (nodesIn(this.nodeOf(h.key)).includes(node)) {
        markMissing(kept, h);
        some = true;
      }
    }
    return some;
  }

  /**
   * The connection closed: new leases wait until the held ones are back; it is ready: put them back now,
   * on the new connection (a restore still on its way was sent on the old one).
   */
  private connection(kept: StoreLeases, event: ConnectionEvent): void {
    kept.epoch += 1;
    const now = this.now();
    for (const [held, at] of kept.recent) if (now - at <= RELEASE_REPLAY_MS && now < held.until) kept.unreleased.add(held);
    kept.recent.clear();
    kept.lost = true;
    kept.missingAll = true;
    kept.retryAt = 0;
    kept.retryMs = RESTORE_RETRY_MS;
    if (event === 'lost') {
      if (kept.down === undefined) {
        let resolve = () => {};
        const promise = new Promise<void>((r) => {
          resolve = r;
        });
        kept.down = { promise, resolve };
      }
      return;
    }
    kept.down?.resolve();
    kept.down = undefined;
    this.restore(kept);
  }

  /** Starts putting back every lease held in `kept.store`; `kept.restoring` until it settles. */
  private restore(kept: StoreLeases): Promise<void> {
    const restoring = this.restoreAll(kept, kept.epoch);
    kept.restoring = restoring;
    void restoring.then(() => {
      if (kept.restoring === restoring) kept.restoring = undefined;
    });
    return restoring;
  }

  /**
   * Ends `held` in a store that can lose it; when the store cannot be told now (a blip, an outage), the
   * lease is released again before the next restore, so it does not hold its slot for the rest of its
   * lease time once the store is back.
   */
  private releaseKept(kept: StoreLeases, held: Held): PromiseLike<void> | undefined {
    kept.held.delete(held);
    // A carried lease no restore sent yet: the store never had it, nothing to tell.
    if (!held.inStore) return undefined;
    const putBack = held.putBack;
    if (putBack === undefined) return this.sendRelease(kept, held);
    const release = () => this.sendRelease(kept, held);
    return putBack.then(release, release);
  }

  /** Tells the store `held` ended; returns the call while it is on its way. */
  private sendRelease(kept: StoreLeases, held: Held): PromiseLike<void> | undefined {
    const now = this.now();
    let failed = false;
    const landing = this.sending(
      () => this.aside(held.key, kept.store.release?.(held.key, held.plan, held.lease, now)),
      () => {
        failed = true;
        kept.unreleased.add(held);
        kept.lost = true;
      },
    );
    // A call that threw at once failed; one on its way is told, unless it fails later (then it is unreleased).
    if (!failed) sentRelease(kept, held, now);
    return landing;
  }

  /** A renewal that puts the lease back if the store lost it; then the others are put back too. */
  private renewKept(kept: StoreLeases, held: Held, now: number): Promise<boolean> {
    held.until = now + held.leaseMs;
    kept.held.add(held);
    return puttingBack(held, this.aside(held.key, kept.store.restore(held.key, held.plan, held.lease, now))).then((live) => {
      if (!live) {
        kept.losses += 1;
        kept.renewedBack += 1;
        markMissing(kept, held);
        if (!kept.lost) {
          kept.lost = true;
          if (kept.restoring === undefined) this.restore(kept);
        }
      }
      return live;
    });
  }

  /**
   * Sends the restores of `list` to `kept.store`: one promise per lease (recorded as its put-back, so a
   * release waits for it), true when it was live. Through `restoreMany` when the store has it, so the
   * leases go in a few calls: one `restore` per lease put 3,000 back 112-197 ms after a restarted Redis was
   * ready (a loaded 2-core machine; 250-360 ms on the tester's), and other processes' new leases ran beside
   * them that long; 15 calls now, 21-69 ms. A store without it gets one `restore` per lease, as before.
   */
  private putBack(kept: StoreLeases, list: readonly Held[], now: number): Promise<boolean>[] {
    const store = kept.store;
    if (store.restoreMany === undefined || list.length === 0) {
      return list.map((h) =>
        puttingBack(
          h,
          attempt(() => this.aside(h.key, store.restore(h.key, h.plan, h.lease, now))),
        ),
      );
    }
    const parts: Promise<boolean>[][] = list.map(() => []);
    try {
      for (const call of store.restoreMany(list, now)) {
        // One call for the watchdog, however many leases it carries.
        const live = this.aside(call.key, call.live);
        live.then(undefined, none);
        call.leases.forEach((at, k) => {
          parts[at]?.push(live.then((flags) => flags[k] === true));
        });
      }
    } catch (error) {
      const failed = Promise.reject(error);
      for (const p of parts) p.push(failed);
      failed.then(undefined, none);
    }
    return list.map((h, i) => {
      const p = parts[i] as Promise<boolean>[];
      // Most leases are in one call (their policies' keys in one slot): no Promise.all per lease.
      return puttingBack(h, p.length === 1 ? (p[0] as Promise<boolean>) : Promise.all(p).then((all) => all.every(Boolean)));
    });
  }

  /**
   * Puts back every lease held in `kept.store`, after sending again the releases it could not take. A
   * lease whose call failed stays missing (`missingOn`: its node), the others are back; the store is
   * whole again when all calls succeed, the connection is still the one of `epoch`, no release failed and
   * no renewal found its lease gone meanwhile (the store may have lost them again after these calls ran).
   * Never rejects.
   */
  private async restoreAll(kept: StoreLeases, epoch: number): Promise<void> {
    const now = this.now();
    const losses = kept.losses;
    // Where the store may lack leases: everywhere after a reconnect, else the nodes of `missingOn`. A
    // lease there that is not put back stays missing; a failed call elsewhere is only a failed call.
    const everywhere = kept.missingAll;
    const suspect = this.nodesOf(kept.missingOn);
    const list: Held[] = [];
    // Of them, the leases the failure mode granted: not missing from the store, never sent there yet.
    const carried = new Set<Held>();
    for (const h of kept.held) {
      if (now < h.until && now <= h.renewUntil) {
        list.push(h);
        if (!h.inStore) carried.add(h);
        h.inStore = true;
      } else if (now >= h.until) kept.held.delete(h);
    }
    // Leases released while the store could not be told go first: still live there until their deadline.
    const ending = [...kept.unreleased].filter((h) => now < h.until);
    kept.unreleased.clear();
    const released = Promise.allSettled(
      ending.map((h) => attempt(() => this.aside(h.key, kept.store.release?.(h.key, h.plan, h.lease, now)))),
    );
    const givenBack = Promise.all(kept.givingBack).then(none);
    const answers = await Promise.allSettled(this.putBack(kept, list, now));
    const told = await released;
    // At most half a new lease's wait: a give-back to a node that went down with it is sent again by the
    // client for seconds (ioredis' Cluster), and every node's new leases waited on it (71 of 1,025 checks of
    // the healthy masters' keys degraded, a master killed, on a loaded machine).
    await atMostRestoreWait(givenBack, RESTORE_WAIT_MS / 2);
    const failures: unknown[] = [];
    const notBack: Held[] = [];
    let back = 0;
    answers.forEach((a, i) => {
      const h = list[i] as Held;
      if (a.status === 'rejected') {
        failures.push(a.reason);
        if (everywhere || reaches(this.nodeOf(h.key), suspect)) notBack.push(h);
      } else if (!a.value && !carried.has(h)) back += 1;
    });
    told.forEach((a, i) => {
      const h = ending[i] as Held;
      // Told on this connection, which a failover may end too; or told again by the next restore.
      if (a.status === 'fulfilled') sentRelease(kept, h, now);
      else {
        failures.push(a.reason);
        kept.unreleased.add(h);
        kept.lost = true;
      }
    });
    if (kept.epoch === epoch && kept.losses === losses) {
      kept.missingAll = false;
      kept.missingOn = new Set(notBack);
      kept.missingNodes = undefined;
      if (failures.length === 0 && kept.unreleased.size === 0) kept.lost = false;
    } else for (const h of notBack) markMissing(kept, h);
    if (failures.length === 0) {
      if (ending.length + list.length > 0) this.failing = false;
      kept.restoreError = undefined;
      kept.retryMs = RESTORE_RETRY_MS;
      // With the leases renewals put back themselves (the only way a Cluster's lost leases are found).
      back += kept.renewedBack;
      kept.renewedBack = 0;
    } else {
      // Said once every lease is back (the line says they were put back before any new lease).
      back = 0;
      kept.restoreError = failures[0];
      if (kept.epoch === epoch) {
        kept.retryAt = this.now() + kept.retryMs;
        kept.retryMs = Math.min(2 * kept.retryMs, RESTORE_RETRY_MAX_MS);
      }
      this.failed(failures[0]);
    }
    if (back > 0 && this.warns('WRN_RL_LEASES_RESTORED')) {
      safeLog(
        this.logger,
        'warn',
        { code: 'WRN_RL_LEASES_RESTORED', store: this.storeKind, restored: back, held: list.length },
        `WRN_RL_LEASES_RESTORED: the store had lost ${back} leases this limiter held (a restart or a failover); the ${list.length} it holds were put back before any new lease ${seeDocs('WRN_RL_LEASES_RESTORED')}`,
      );
    }
  }

  /**
   * Runs a release or renewal: its synchronous answer, 'sent' while it is on its way, 'failed' when it
   * threw; `onFailure` runs when it threw or was rejected.
   */
  /**
   * `send`, returning what settles when the call lands while it is on its way (undefined once answered or
   * failed). It never rejects: the failure is `send`'s to handle, and whoever chains on it (a release after
   * a put-back) must not leave a rejection unhandled.
   */
  private sending(call: () => unknown, onFailure?: () => void): PromiseLike<void> | undefined {
    let landing: PromiseLike<void> | undefined;
    this.send(() => {
      const pending = call();
      if (isPromiseLike(pending)) landing = pending.then(none, none);
      return pending;
    }, onFailure);
    return landing;
  }

  private send<T>(call: () => T | Promise<T> | undefined, onFailure?: () => void): T | 'sent' | 'failed' {
    try {
      const pending = call();
      if (!isPromiseLike(pending)) return pending as T;
      pending.then(
        () => {
          this.failing = false;
        },
        (error: unknown) => {
          onFailure?.();
          this.failed(error);
        },
      );
      return 'sent';
    } catch (error) {
      onFailure?.();
      this.failed(error);
      return 'failed';
    }
  }

  /**
   * A release or renewal the store refused: the lease ends by its lease time. Logged once per run of
   * failures, and at most once per LEASE_LOG_INTERVAL_MS (counting the runs left out): on a Cluster
   * with one master down, the calls the healthy masters answer end each run at once.
   */
  private failed(error: unknown): void {
    if (this.failing) return;
    this.failing = true;
    const notLogged = this.lines.take(this.now());
    if (notLogged === undefined) return;
    safeLog(
      this.logger,
      'error',
      { code: 'ERR_RL_STORE_FAILED', store: this.storeKind, operation: 'lease', notLogged, err: error },
      'ERR_RL_STORE_FAILED: a lease could not be released or renewed; a release is sent again once the store answers, and a lease ends by itself after its leaseMs',
    );
  }

  private count(cp: CompiledPlan, field: 'leases' | 'queued', n: number): void {
    for (const p of cp.all) {
      if (p.algorithm !== 'concurrency' || (field === 'queued' && p.queue === undefined)) continue;
      const c = this.inFlight.get(p.name);
      if (c !== undefined) c[field] += n;
    }
  }
}

/** A refusal a queued request may wait out: only concurrency policies with a queue refused it. */
export function waitsOut(d: Decision, cp: CompiledPlan): boolean {
  return d.reason === 'limited' && d.policies.every((r, i) => r.allowed || cp.all[i]?.queue !== undefined);
}

/**
 * The refusal of a waiter whose client went away before its turn, or of a request that found its queue
 * full: nothing was asked of the store, so nothing is taken; the queueing policies refuse (retry after
 * MAX_LEASE_RETRY_MS), the others show their capacity (not evaluated).
 */
export function leftQueue(
  cp: CompiledPlan,
  key: string,
  cost: number,
  mode: 'enforce' | 'shadow',
  /** Whether the policy at an index refuses: by default every queueing one (a waiter that left); a full queue names its own. */
  refuses: (i: number) => boolean = (i) => cp.all[i]?.queue !== undefined,
): DecisionImpl {
  const results = cp.all.slice(0, cp.enforcedCount).map((p, i) => {
    const waited = refuses(i);
    return new Result(
      p.name,
      p.algorithm,
      !waited,
      false,
      p.limit,
      p.windowMs,
      p.capacity,
      waited ? 0 : p.capacity,
      waited ? MAX_LEASE_RETRY_MS : 0,
      0,
      0,
      undefined,
    );
  });
  const b = results.find((r) => !r.allowed) as Result;
  const d = new DecisionImpl(
    mode === 'shadow',
    true,
    'limited',
    mode,
    key,
    costUnits(cost),
    b.name,
    0,
    b.retryAfterMs,
    0,
    0,
    results,
    undefined,
    false,
  );
  d.plan = cp.name;
  return d;
}
