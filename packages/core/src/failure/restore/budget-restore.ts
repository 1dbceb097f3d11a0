/**
 * @module Budgets back after a store that lost its state: a Redis without persistence that restarts,
 * FLUSHALL, a failover to an empty replica. Such a store answers every key from a full budget, and a key
 * exhausted before would get its whole limit again in the same window. Remembering each key's last answer
 * (failure/answer-memory.ts, on every store that can fail, whatever `onStoreError`), the limiter sets a mark in the store at
 * start and asks for it again after every reconnect (`Store.markAlive`); when the mark changed, the
 * store lost its state (if the keys agree: a mark can go alone, `agree`), and the limiter charges it
 * again, policy by policy, what it had counted for each key this process remembers, as read when the
 * connection was ready again (before any new answer). A
 * loss no connection event tells of (a FLUSHALL; a Cluster master restarted while no call went to it) is
 * found by the first answer that could not follow the last one remembered for its key (more budget than
 * the key could have had back since: AnswerMemory.onRegress), which asks for the mark (`suspect`), with
 * what the memory counts before that answer replaces the key's.
 *
 * A Redis Cluster keeps a mark on each master (stores/redis/node-marks.ts), since a master can lose its
 * keys alone: it is set again when that master's breaker closes (`nodeBack`) or an answer from it could
 * not follow, and only the keys it serves are charged; the other limiters on the same store are told too
 * (`Store.watchNodeLoss`), as their own breakers may not have seen that master fail.
 *
 * Every process of the limiter is told of a loss, not only the first to set the mark again: the mark holds
 * a token set anew where it was missing (stores/redis/node-marks.ts `MarkTokens`), so a process that finds
 * another token than it found last knows the store lost its state since, at its own reconnect or at its
 * own first answer that could not follow. Each charges its memory (the keys it decided last, at most
 * 10,000 per plan, as of its last answer for each), a key only what the others did not charge it already
 * (`Store.restored`, a ledger per key in the store that each raises to what it counts): a key several
 * processes decided ends with what the one that saw the most had counted, in whatever order they come.
 *
 * A store can also come back with some of its counts and its mark: a crash restarted from an older RDB
 * snapshot, a replica promoted before it had the last writes. Which server answers on each node
 * (failure/restore/server-changes.ts: a Redis's run_id) is read at start, after every reconnect, when a node's
 * breaker closes and when an answer could not follow; after it changed, a key whose next answer could not
 * follow its last one from before the change is charged the difference (`regressed`). A store that answers
 * from batches (`localBatch`) cannot tell by its answers: there the keys that had used the most are read as
 * the connection comes back, and charged the difference once the reading says the server changed
 * (`sweepBehind`).
 *
 * Nothing here exists for a store without `markAlive` and `watchConnection`, or a limiter that does not
 * remember (a MemoryStore, a plan of concurrency policies alone).
 */

import { MILLI } from '../../internal/fixed-point.js';
import type { StoreTimer } from '../../observability/store-timer.js';
import type { CompiledPlan } from '../../plans/compiled-plan.js';
import {
  keyAt,
  R_REMAINING,
  RESULT_STRIDE,
  type Store,
  type StoreKey,
  type StoreResult,
  storeKeyText,
  subPlan,
} from '../../stores/store.js';
import type { Clock } from '../../types.js';
import type { Counted, Regress } from '../answer-memory.js';
import type { Fallback } from '../fallback.js';
import { nodesIn, type StoreGuard, WHOLE_STORE } from '../store-guard.js';
import { RestoreCharges } from './restore-charges.js';
import { ServerChanges } from './server-changes.js';
import type { SureCharges } from './sure-charges.js';

/**
 * A restore, reported (WRN_RL_BUDGETS_RESTORED): `keys` charged again after a loss (of one node's, on a
 * Cluster), or `behind`: a changed server answered with less than it had counted, and its keys are charged
 * the difference as they are next answered.
 */
export type RestoreReport = (
  restore: { readonly keys: number; readonly node: string | undefined } | { readonly behind: true; readonly node: string | undefined },
) => void;

type Snapshot = readonly (readonly [CompiledPlan, readonly Counted[]])[];

/** The least time between two questions of a node's mark prompted by answers (`suspect`). */
const SUSPECT_EVERY_MS = 1_000;

/** How long after a loss a mark found as its restore set it says the answers came from that loss (`chargeIfLost`). */
const RECENT_LOSS_MS = 1_000;

/** How many remembered keys a mark found gone is checked against (BudgetRestore.agree). */
const WITNESSES = 3;

/** The most keys remembered as having shown a loss (BudgetRestore.lossWitnesses) before they are forgotten. */
const REMEMBERED_WITNESSES = 10_000;

/** The key of `BudgetRestore.verdicts` for a question on the store's one mark (no master's name). */
const ALL_NODES = '';

/**
 * How many remembered keys, those that had used the most, a store that batches reads at a reconnect, in
 * case its server changed (BudgetRestore.sweepBehind).
 */
const SWEPT_KEYS = 1_000;

/** The `n` keys of `counted` that had used the most, each with its plan. */
function mostUsed(counted: Snapshot, n: number): (readonly [CompiledPlan, Counted])[] {
  const total = (c: Counted) => c.used.reduce((a, b) => a + b, 0);
  const all = counted.flatMap(([cp, keys]) => keys.map((c) => [cp, c] as const));
  return all.sort((a, b) => total(b[1]) - total(a[1])).slice(0, n);
}

/**
 * Whether `x`'s answer came from a key the store lost most of: every policy the memory counted a unit of
 * at least held less than half of it before the call's own charge (as `intact` reads a key). So answers a
 * store that lost the key, the first and those of the checks in flight with it (and a reset from
 * elsewhere); a refund from elsewhere, or a batch given back, rarely gives back that much.
 */
function emptied(x: Regress): boolean {
  let counted = false;
  for (let i = 0; i < x.was.used.length; i++) {
    const used = x.was.used[i] as number;
    if (used < MILLI) continue;
    if ((x.answered[i] as number) >= used / 2) return false;
    counted = true;
  }
  return counted;
}

/** A key of a snapshot, with the store's state of it read as the snapshot was taken (BudgetRestore.holdsNow). */
interface Holding {
  readonly cp: CompiledPlan;
  readonly c: Counted;
  readonly read: Promise<StoreResult | undefined>;
}

/** What `r`, the store's state of a key of `cp`, counts for policy `i`: its capacity less what is left, milli-units. */
function held(cp: CompiledPlan, r: StoreResult, i: number): number {
  const p = cp.storePlan.policies[i];
  return p === undefined ? 0 : p.capMilli - (r[i * RESULT_STRIDE + R_REMAINING] as number);
}

/** Whether `r`, the store's state of `c`'s key now, still holds at least half of what some policy of it had used (a unit at least). */
function intact(cp: CompiledPlan, c: Counted, r: StoreResult | undefined): boolean {
  if (r === undefined) return false;
  for (let i = 0; i < c.used.length; i++) {
    const used = c.used[i] as number;
    if (used >= MILLI && held(cp, r, i) >= used / 2) return true;
  }
  return false;
}

export class BudgetRestore {
  private readonly unwatch: () => void;
  private readonly unwatchNodes: (() => void) | undefined;
  /** When each node's mark was last asked for because of an answer (`suspect`). */
  private readonly asked = new Map<string, number>();
  /** When each node's mark was last asked within the second, for an answer from a key the store lost most of (`suspect`). */
  private readonly askedEmptied = new Map<string, number>();
  /** When each node (ALL_NODES: the store's one mark) was last found to have lost its state (`chargeIfLost`). */
  private readonly lostAt = new Map<string, number>();
  /** Which server answers on each node, and since when (undefined for a store that cannot say). */
  private readonly servers: ServerChanges | undefined;
  /** The change of server last reported (`regressed`). */
  private behindTold = Number.NEGATIVE_INFINITY;
  /** The keys whose answers could not follow since the keys were last asked to `agree`: witnesses of a loss. */
  private readonly lossWitnesses = new Set<string>();
  /** The keys this process charged again at the last loss (`chargeIfLost`): their batches count the charge (`suspected`). */
  private readonly restoredHere = new Set<string>();
  /** The verdicts of the questions out (true: the store lost its state), per master, or ALL_NODES for the store's one mark. */
  private readonly verdicts = new Map<string, Promise<boolean>>();

  private constructor(
    private readonly store: Store & Required<Pick<Store, 'markAlive' | 'watchConnection'>>,
    /** The plan whose limiter names the mark (all plans of a limiter share its name). */
    private readonly plan: CompiledPlan,
    private readonly fallbacks: ReadonlyMap<CompiledPlan, Fallback>,
    private readonly charges: RestoreCharges,
    private readonly guard: StoreGuard,
    private readonly now: Clock,
    /** Reports a restore (WRN_RL_BUDGETS_RESTORED), unless switched off. */
    private readonly report: RestoreReport | undefined,
  ) {
    this.unwatch = store.watchConnection((event) => {
      if (event === 'ready') this.markWhole();
    });
    // Another limiter on this store found a Cluster master lost its keys: this one's mark there went too.
    const name = plan.storePlan.policies[0]?.limiter;
    this.unwatchNodes = store.watchNodeLoss?.((node, limiter) => {
      if (limiter !== name) this.masterBack(node);
    });
    // A loss no connection event tells of (a FLUSHALL, a master restarted while nothing was sent to it).
    // Where batches given back raise a key's remaining with nothing lost, such an answer only asks the mark.
    for (const [cp, f] of fallbacks) f.watchRegress(store.batches === true ? (x) => this.suspected(cp, x) : (x) => this.regressed(cp, x));
    // Set at start, so that a later reconnect that finds it changed knows the store lost it.
    void this.mark([]);
    this.servers = ServerChanges.of(store);
    void this.servers?.read(Number.NEGATIVE_INFINITY);
  }

  /** The restore of a limiter whose failure mode remembers, on a store that can tell a loss; else undefined. */
  static of(
    store: Store,
    plan: CompiledPlan,
    fallbacks: ReadonlyMap<CompiledPlan, Fallback>,
    guard: StoreGuard,
    timed: StoreTimer,
    sure: SureCharges,
    now: Clock,
    report: RestoreReport | undefined,
  ): BudgetRestore | undefined {
    if (store.markAlive === undefined || store.watchConnection === undefined) return undefined;
    // Only rate policies are remembered: a plan of concurrency policies alone has nothing to charge again.
    const rates = (cp: CompiledPlan) => cp.storePlan.policies.slice(0, cp.enforcedCount).some((p) => p.algorithm !== 'concurrency');
    if (![...fallbacks].some(([cp, f]) => f.remembers && rates(cp))) return undefined;
    const charges = new RestoreCharges(sure, timed, store.restored?.bind(store));
    return new BudgetRestore(store as BudgetRestore['store'], plan, fallbacks, charges, guard, now, report);
  }

  /**
   * A node's breaker closed (it answers again). On a store that marks each node (a Redis Cluster, whose
   * masters lose their keys one by one), sets the mark of each master `node` names (the breaker of calls
   * over several masters names them all: StoreGuard.nodeOfKey) and, where it changed, charges again
   * what the keys that master serves had counted; checks wait for it as at a reconnect. False when the
   * store keeps one mark for all (one server): nothing was asked.
   */
  nodeBack(node: string): boolean {
    let marked = false;
    for (const master of nodesIn(node)) marked = this.masterBack(master) || marked;
    return marked;
  }

  /**
   * The store answered `storeKey` with more budget than it could have had back since the last answer this
   * process remembers (AnswerMemory.onRegress): a refund or a reset from elsewhere, or a store that lost
   * its state with no reconnect to tell of it (a `FLUSHALL`, a Cluster master restarted while no call went
   * to it). The mark says which: asked now (of the key's master on a Cluster) with what the memory counts
   * before this answer replaces the key's, and charged again where it was gone. At most once a second per
   * node, so refunds from other processes cost one small call a second at most; and once more within
   * it for a key the store lost most of (`emptied`), which a refund does not leave (a reset from elsewhere
   * does): within that second a hot key took its whole limit again from a `FLUSHALL`ed Redis (four
   * processes with `localBatch`, 6,000 of 3,000).
   */
  private suspect(x: Regress): void {
    const storeKey = x.was.storeKey;
    // Called on the decision path, with the answer in hand: a question that cannot be asked is no loss,
    // and never fails the decision.
    try {
      const node = this.guard.nodeOfKey(storeKey);
      const at = this.now();
      if (at - (this.asked.get(node) ?? Number.NEGATIVE_INFINITY) < SUSPECT_EVERY_MS) {
        // Within the second, only for a key found emptied, and once: a reset from elsewhere empties a key
        // as a loss does (a process resetting 50 keys a second made each other process ask 50 times, and
        // read its 1,000 most used keys each time).
        if (!emptied(x) || at - (this.askedEmptied.get(node) ?? Number.NEGATIVE_INFINITY) < SUSPECT_EVERY_MS) return;
        this.askedEmptied.set(node, at);
      }
      // A question out answers for this loss too: asked again, the mark the first set anew would say
      // the store lost nothing, and its verdict would let the emptied keys' answers through before the
      // first's charges are in (a Redis stopped 1.5 s as the connection came back: 8 of 10 admitted again).
      if (this.verdictOn(storeKey) !== undefined) return;
      this.asked.set(node, at);
      if (!this.nodeBack(node)) this.markWhole();
    } catch {}
  }

  /**
   * An answer of a store that batches could not follow: the mark is asked (`suspect`), and the answer is
   * taken as it is (a batch another process gave back raises a key with nothing lost): the batches in
   * hand count a restore's charge from then on (Store.chargedBeside). But one from a key the store lost
   * most of (`emptied`) waits for the verdict, as on a store that does not batch: a hot key took 773
   * more in the round trip of the question, from batches taken on a key a `FLUSHALL` emptied. Found
   * lost, where another process charged the key again (this one owed nothing beside its ledger), the
   * batches this process took from the emptied key are dropped unspent (Store.lostHeld): that charge
   * took what was left beside them, so spent they were admitted beyond the limit (a batch over: 3,296 of
   * 3,000). Where this one charged it, they count its charge (Store.chargedBeside).
   */
  private suspected(cp: CompiledPlan, x: Regress): Promise<boolean> | undefined {
    this.witness(x.was.storeKey);
    this.suspect(x);
    const verdict = emptied(x) ? this.verdictOn(x.was.storeKey) : undefined;
    // Before the answers that wait on it go on (a promise's callbacks run in the order they were added).
    void verdict?.then((lost) => {
      if (lost && !this.restoredHere.has(storeKeyText(x.was.storeKey))) this.store.lostHeld?.(x.was.storeKey, cp.storePlan);
    });
    return verdict;
  }

  /**
   * An answer could not follow the last one remembered for its key. When the server of its node changed
   * since that last answer (ServerChanges, read at a reconnect, a breaker that closed, or the question
   * `suspect` asks now, waited for), the server may hold older counts than it gave (an RDB snapshot older
   * than a crash; a replica promoted before it had the last writes; an AOF synced each second), with its
   * mark intact: the key is charged the difference, as a restore would, less what other processes charged
   * it again already and what the store still holds (RestoreCharges.recharge), with checks held for it
   * (one round trip, StoreGuard.holdFor). Either way, the mark is asked (`suspect`), and the key is a
   * witness of the loss (`agree`). Returns the verdict of the question out on the key's node, if any: the
   * answer, and those of the checks in flight with it, wait for it (as held checks do), and where the
   * store lost the key they are decided by what it had (Fallback.againstRecord), not by a key it emptied.
   */
  private regressed(cp: CompiledPlan, x: Regress): Promise<boolean> | undefined {
    this.witness(x.was.storeKey);
    this.suspect(x);
    // A refused call's late answer tells of a loss only: what it read counts charges that go back (those of
    // the other refused calls run late with it), no measure of what the key lacks (`behind`).
    if (x.late === true) return undefined;
    this.behind(cp, x);
    return this.verdictOn(x.was.storeKey);
  }

  /** The verdict of the question out on `storeKey`'s node (its master's, or the store's one mark), if any. */
  private verdictOn(storeKey: StoreKey): Promise<boolean> | undefined {
    if (this.verdicts.size === 0) return undefined;
    const all = this.verdicts.get(ALL_NODES);
    if (all !== undefined) return all;
    try {
      for (const master of nodesIn(this.guard.nodeOfKey(storeKey))) {
        const verdict = this.verdicts.get(master);
        if (verdict !== undefined) return verdict;
      }
    } catch {}
    return undefined;
  }

  /**
   * `verdict` is out for `node` (ALL_NODES: the store's one mark) until it settles: an answer waits for it
   * at most the longest a hold keeps a check (StoreGuard.holdBoundMs), and a question the store does not
   * answer in time counts as a loss for the answers that wait on it (they are decided by what their keys
   * had; a verdict that the store lost nothing, when it comes, lets later answers through again,
   * AnswerMemory.release). The verdict stays out until it settles, not only for that bound: on a loaded
   * host the mark's answer and the charges came after it, and the answers from the emptied keys that
   * came meanwhile were taken as they were (four processes, a restart without persistence: the whole
   * limit admitted again in 3 of about 25 runs).
   */
  private judging(node: string, verdict: Promise<boolean>): Promise<boolean> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const bounded = Promise.race([
      verdict,
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), this.guard.holdBoundMs());
        timer.unref?.();
      }),
    ]).finally(() => clearTimeout(timer));
    void verdict.finally(() => {
      if (this.verdicts.get(node) === bounded) this.verdicts.delete(node);
    });
    this.verdicts.set(node, bounded);
    return bounded;
  }

  /**
   * `storeKey` answered with more budget than it could have had back: no witness that the store kept its
   * state when the keys are asked to `agree` (on a store that batches too: a batch given back raises a
   * key as a loss does, but only a mark found changed makes it a loss, and the checks of other processes
   * refill the key before it is read: a process started after a FLUSHALL took 1,700 of 2,000 from it, the
   * loss was denied, and the window admitted 4,000).
   */
  private witness(storeKey: StoreKey): void {
    if (this.lossWitnesses.size >= REMEMBERED_WITNESSES) this.lossWitnesses.clear();
    this.lossWitnesses.add(storeKeyText(storeKey));
  }

  /** `regressed`'s charge of a key behind on a server that changed (see there). */
  private behind(cp: CompiledPlan, x: Regress): void {
    const servers = this.servers;
    if (servers === undefined) return;
    let node: string;
    try {
      node = this.guard.nodeOfKey(x.was.storeKey);
    } catch {
      return;
    }
    const judge = (): Promise<void> | undefined => {
      const changed = servers.changedAt(node);
      if (!(x.since < changed)) return undefined;
      return this.charges.recharge(cp.storePlan, x.was, x.answered).then(
        (some) => {
          // Once per change of server, at its first key charged: the keys that follow are charged alike.
          if (!some || this.behindTold === changed) return;
          this.behindTold = changed;
          this.report?.({ behind: true, node: servers.single ? undefined : node });
        },
        () => undefined,
      );
    };
    const reading = servers.readingOf(node);
    // The next checks go after the charge (as at a restore), not beside it while the ledger is read.
    const charging = reading === undefined ? judge() : reading.then(judge);
    if (charging !== undefined) this.guard.holdFor(charging);
  }

  /**
   * `RestoreCharges.recharge` of `c`'s key after a loss, noted in `restoredHere` when something was charged.
   * A policy is charged at least the count the store's replies tell of the key at the loss (Store.countAtLoss:
   * with `localBatch`, what the other processes took since the batch this process was spending), and the
   * key's record, which decides its answers until the charge is in (Fallback.againstRecord), counts it too.
   */
  private recharge(cp: CompiledPlan, c: Counted): Promise<boolean> {
    const at = this.now();
    const seen = typeof c.storeKey === 'string' ? this.store.countAtLoss?.(c.storeKey, cp.storePlan, at) : undefined;
    let counted = c;
    if (seen !== undefined) {
      // A count that is no finite number (a reply Redis garbled) adds nothing: the memory's stands.
      const at0 = (i: number) => (Number.isFinite(seen[i]) ? Math.floor(seen[i] as number) : 0);
      const used = c.used.map((u, i) => ((c.until[i] as number) > 0 ? Math.max(u, at0(i)) : u));
      counted = { ...c, used };
      this.fallbacks.get(cp)?.countedAtLeast(c.storeKey as string, used, at);
    }
    return this.charges.recharge(cp.storePlan, counted).then((some) => {
      if (some) this.restoredHere.add(storeKeyText(c.storeKey));
      return some;
    });
  }

  /** Asks for the store's one mark with what every remembered key counts now, and which servers answer; holds checks for both. */
  private markWhole(): void {
    // A question out: an answer that could not follow waits for its verdict rather than ask again (`suspect`).
    this.asked.set(WHOLE_STORE, this.now());
    const counted = this.snapshot();
    this.holdWhile(this.withServers(this.mark(counted), counted), counted);
  }

  /**
   * `restoring`, and a reading of which servers answer now (ServerChanges; with `node`, only there: a dead
   * master's reading then holds no check of the others), together; on a store that
   * batches, the keys of `counted` on a server that changed are then charged what it lacks (`sweepBehind`).
   */
  private withServers(restoring: Promise<void>, counted: Snapshot, node?: string): Promise<void> {
    const servers = this.servers;
    if (servers === undefined) return restoring;
    const at = this.now();
    // Read before the reading is sent: what the store holds of each key as the connection came back.
    const holds = this.store.batches === true ? this.holdsNow(counted, at) : undefined;
    const reading = servers.read(at, node);
    const behind = holds === undefined ? reading : reading.then(() => this.sweepBehind(holds, at));
    return Promise.all([restoring, behind]).then(() => undefined);
  }

  /**
   * What the store holds now of the SWEPT_KEYS keys of `counted` that had used the most, each read (a peek,
   * which counts this process's unspent units as not spent, as its answers did) in the same step as the
   * memory was: sent before any check the reconnect holds, and before any batch those checks would take,
   * the reads see the store as `counted` was taken, however long the reading of servers takes.
   */
  private holdsNow(counted: Snapshot, at: number): Holding[] {
    if (this.store.peek === undefined) return [];
    return mostUsed(counted, SWEPT_KEYS).map(([cp, c]) => ({ cp, c, read: this.read(cp, c, at) }));
  }

  /** The store's state of `c`'s key at `at` (a peek, sent now); undefined when it cannot be read. */
  private read(cp: CompiledPlan, c: Counted, at: number): Promise<StoreResult | undefined> {
    try {
      return Promise.resolve(this.store.peek?.(c.storeKey, cp.storePlan, MILLI, at)).catch(() => undefined);
    } catch {
      return Promise.resolve(undefined);
    }
  }

  /**
   * A store that answers hot keys from batches (RedisStore `localBatch`) cannot tell a key behind by its
   * answers (a batch given back raises a key's remaining with nothing lost, so `regressed` is off), and a
   * batch it holds is spent whatever the server kept of its charge. So after a change of server, read at
   * `at`, every key of `holding` that the changed node serves is charged what it had counted beyond what
   * the store held then, less what other processes charged it again (RestoreCharges.recharge); a key that
   * lacks less than a unit for every policy (a clean restart, a bucket's refill since) is charged nothing.
   */
  private async sweepBehind(holding: readonly Holding[], at: number): Promise<void> {
    const servers = this.servers;
    if (servers === undefined) return;
    const charged = await Promise.all(
      holding.map(async ({ cp, c, read }) => {
        try {
          const node = this.guard.nodeOfKey(c.storeKey);
          if (servers.changedAt(node) < at) return undefined;
          const r = await read;
          if (r === undefined) return undefined;
          const holds = Float64Array.from(c.used, (_, i) => held(cp, r, i));
          if (!c.used.some((u, i) => u - (holds[i] as number) >= MILLI)) return undefined;
          return (await this.charges.recharge(cp.storePlan, c, holds)) ? node : undefined;
        } catch {
          return undefined;
        }
      }),
    );
    const node = charged.find((n) => n !== undefined);
    if (node === undefined || this.behindTold === at) return;
    this.behindTold = at;
    this.report?.({ behind: true, node: servers.single ? undefined : node });
  }

  /** `nodeBack` for one master; false when the store keeps no mark per node (one server). */
  private masterBack(node: string): boolean {
    let marking: Promise<boolean> | undefined;
    try {
      marking = this.store.markNodeAlive?.(this.plan.storePlan, node);
    } catch {
      return true;
    }
    if (marking === undefined) return false;
    this.asked.set(node, this.now());
    const counted = this.snapshot(node);
    this.holdWhile(this.withServers(this.chargeIfLost(marking, counted, node), counted, node), counted);
    return true;
  }

  /**
   * Checks sent while `restoring` runs would be answered from a budget the store may have lost: when
   * `counted` has something to charge, they wait for its charges to go ahead of them (one round trip;
   * StoreGuard.holdFor).
   */
  private holdWhile(restoring: Promise<void>, counted: Snapshot): void {
    if (counted.some(([, keys]) => keys.length > 0)) this.guard.holdFor(restoring);
  }

  /**
   * What the store had counted for every remembered key, read now; with `node`, only what that node
   * holds (of a decision over several keys, the policies whose key it serves).
   */
  private snapshot(node?: string): Snapshot {
    const at = this.now();
    return [...this.fallbacks].map(([cp, f]) => {
      const counted = f.counted(at);
      if (node === undefined) return [cp, counted] as const;
      const on: Counted[] = [];
      for (const c of counted) {
        // One key: every policy's state lives where that key's tag does.
        if (typeof c.storeKey === 'string') {
          if (this.guard.nodeOf(c.storeKey) === node) on.push(c);
          continue;
        }
        const used = c.used.map((u, i) => (u > 0 && this.guard.nodeOf(keyAt(c.storeKey, i)) === node ? u : 0));
        if (used.some((u) => u > 0)) on.push({ storeKey: c.storeKey, used, until: c.until });
      }
      return [cp, on] as const;
    });
  }

  /** Sets the mark; when it changed, charges `counted` again (`chargeIfLost`). */
  private mark(counted: Snapshot): Promise<void> {
    let marking: Promise<boolean>;
    try {
      marking = this.store.markAlive(this.plan.storePlan);
    } catch {
      return Promise.resolve();
    }
    return this.chargeIfLost(marking, counted);
  }

  /**
   * When `marking` says the mark changed, and the keys agree (`witnessed`), charges `counted` again
   * (RestoreCharges.recharge). Settles once the charges are sent. A mark the store cannot set is no loss.
   * The verdict is out (`judging`) until the charges are in too: an answer that could not follow meanwhile
   * came from a key not charged yet.
   */
  private chargeIfLost(marking: Promise<boolean>, counted: Snapshot, node?: string): Promise<void> {
    const on = node ?? ALL_NODES;
    // The verdict the answers wait for (`judging`), whose records a loss denied releases.
    let bound: Promise<boolean> | undefined;
    // The mark as a loss a moment ago left it: that loss's answers, not another.
    let echo = false;
    const verdict = marking
      .then((changed) => {
        if (!changed && this.now() - (this.lostAt.get(on) ?? Number.NEGATIVE_INFINITY) < RECENT_LOSS_MS) {
          // The mark as the restore of a loss a moment ago set it: the answers that could not follow came from
          // keys emptied then, by calls sent before that restore's charges (a batch in flight): they stand
          // against their records, as that loss's did, and nothing is charged again (four processes on a
          // token bucket, a FLUSHALL: each asked again every few ms, was told 'kept', and took ~100 more).
          echo = true;
          return true;
        }
        if (!changed) {
          // A mark that stayed: no key that could not follow since is a witness of a loss (a give-back, a refund).
          this.lossWitnesses.clear();
          // Nor does this question answer for the answers that come after its own (a store answers in order:
          // they ran after it); one that could not follow asks again (a process took 1,918 from a key a
          // FLUSHALL emptied right after this question was read, its answers waiting on this verdict).
          if (this.verdicts.get(on) === bound) this.verdicts.delete(on);
        }
        return changed && this.agree(counted);
      })
      .then(undefined, () => false);
    const charged = verdict.then(async (lost) => {
      if (!lost) {
        if (bound !== undefined) for (const f of this.fallbacks.values()) f.releaseRecords(bound);
        return false;
      }
      if (echo) return true;
      this.lostAt.set(on, this.now());
      // The ledgers went with the keys: charges of an earlier restore still waiting are this one's now.
      this.charges.lost(node);
      this.restoredHere.clear();
      const charged = await Promise.all(counted.flatMap(([cp, keys]) => keys.map((c) => this.recharge(cp, c))));
      const n = charged.filter((some) => some).length;
      if (n > 0) this.report?.({ keys: n, node });
      return true;
    });
    bound = this.judging(
      on,
      charged.then(undefined, () => true),
    );
    return charged.then(
      () => undefined,
      () => undefined,
    );
  }

  /**
   * Whether the keys agree that the store lost its state: a mark can go alone (evicted under an
   * `allkeys-*` policy, deleted by hand), and charging every key again then would count them twice. The
   * WITNESSES keys that had used the most are read (a peek each): the loss stands unless one of them
   * still holds at least half of what it had used, and was not charged again since a loss (its ledger
   * empty, `Store.restored`: another process may have restored it before this one looked). A store
   * without `peek`, nothing to read, or reads that fail: the mark is believed. A key whose answer could
   * not follow (`regressed`) is no witness that the store kept its state: it showed the loss, and the
   * checks in flight with that answer charge it again before it is read (a hot key, 16 checks in flight
   * after a FLUSHALL: read back past half its use, the loss denied, the limit admitted twice).
   */
  private async agree(counted: Snapshot): Promise<boolean> {
    if (this.store.peek === undefined) return true;
    const showed = this.lossWitnesses;
    const picked = mostUsed(
      counted.map(([cp, keys]) => [cp, keys.filter((c) => !showed.has(storeKeyText(c.storeKey)))] as const),
      WITNESSES,
    );
    showed.clear();
    const now = this.now();
    const reads = picked.map(async ([cp, c]) => {
      try {
        const kept = intact(cp, c, await this.read(cp, c, now)) && !(await this.recharged(cp, c));
        // Nor one whose answer could not follow while it was read: the store answers in order, so those
        // checks ran on it before the read and charged it (a key exhausted before a restart read back at 6
        // of 10 by checks that came with the mark's answer, the loss denied, and the key admitted 8 again).
        return kept && !showed.has(storeKeyText(c.storeKey));
      } catch {
        return false;
      }
    });
    return !(await Promise.all(reads)).some((kept) => kept);
  }

  /** Whether some policy of `c`'s key was charged again since the store lost its state, by any process (its ledger, read). */
  private async recharged(cp: CompiledPlan, c: Counted): Promise<boolean> {
    const reads = Array.from(c.used, (u, i) => (u >= MILLI ? (this.ledger(cp, c, i) ?? 0) : 0));
    return (await Promise.all(reads)).some((before) => before > 0);
  }

  /** The ledger of policy `i` of `c`'s key (`Store.restored`), read; undefined for a store without one. */
  private ledger(cp: CompiledPlan, c: Counted, i: number): Promise<number> | undefined {
    return this.store.restored?.(keyAt(c.storeKey, i), subPlan(cp.storePlan, [i]), 0, Math.max(1, c.until[i] as number));
  }

  close(): void {
    this.unwatch();
    this.unwatchNodes?.();
    this.servers?.close();
    for (const f of this.fallbacks.values()) f.watchRegress(undefined);
  }
}
