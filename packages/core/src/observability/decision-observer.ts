/**
 * @module The one decision event. The limiter hands every Decision it builds (and the timing of every
 * store call) to its observer, which feeds what listens: the metric cells read by OpenTelemetry and
 * prom-client, the `tollgate:decision` diagnostics channel, the active trace span, the hot-key
 * sketches and the shadow-rollout record. Each consumer is behind one cheap check (an exporter is
 * attached, the channel has subscribers, a span records), so a limiter nobody watches pays a few
 * branches per decision; the hot-key sketches (with `hotKeys` on: they are opt-in) and the shadow record
 * are kept whoever watches, in fixed memory.
 */
import { channel } from 'node:diagnostics_channel';
import type { CompiledPolicy } from '../algorithms/kernel.js';
import { DecisionImpl, Verdict } from '../decision.js';
import type { BreakerState } from '../failure/node-health.js';
import { WHOLE_STORE } from '../failure/store-guard.js';
import type { HotKeysOptions, LimiterConfig } from '../options.js';
import type { CompiledPlan } from '../plans/compiled-plan.js';
import type { CheckOptions, Decision } from '../types.js';
import { BoundedRoutes } from './bounded-routes.js';
import { HotKeys, type HotKeysReport, NEAR_LIMIT_SHARE } from './hot-keys.js';
import { limiterAttribute, limiterLabel, RESULTS, type ResultName, SHADOW_VERDICTS, STORE_STATES } from './metric-names.js';
import {
  type AttachedFollower,
  addGaugeSource,
  type CounterCell,
  counterCell,
  exporters,
  followAttached,
  type GaugePoint,
  type HistogramCell,
  histogramCell,
  type Labels,
} from './metric-store.js';
import { probeMeterProvider, recordingSpan, recordShapingDelay } from './otel-meter.js';
import { type ShadowPolicyStats, ShadowPolicyTracker } from './shadow-stats.js';

/** The request-counter cells of one (route, plan), policy-major then result. */
class RequestCells {
  readonly slots: (CounterCell | undefined)[];
  constructor(
    readonly route: string | undefined,
    readonly plan: string | undefined,
    policies: number,
  ) {
    this.slots = new Array(policies * RESULT_COUNT);
  }
}

/** The diagnostics channel every decision is published on. */
export const DECISION_CHANNEL = 'tollgate:decision';
const decisionChannel = channel(DECISION_CHANNEL);

/** What `tollgate:decision` subscribers receive. */
export interface DecisionMessage {
  readonly decision: Decision;
  /** The framework's request object (Express `req`, Fastify `request`, Koa `ctx`); undefined for direct `check()` calls. */
  readonly request: unknown;
  /** The route template, where the framework knows it (`/users/:id`); never the raw URL. */
  readonly route: string | undefined;
  /** The store the limiter uses (`memory`, `redis`). */
  readonly store: string;
  /** The limiter's `name`; undefined without one. */
  readonly limiter: string | undefined;
}

/** Shadow record: a ring of 12 intervals of 10 s, two minutes of history. */
const SHADOW_INTERVAL_MS = 10_000;
const SHADOW_RING = 12;
/** `hotKeys()` of a limiter with hot keys off (the default). */
const HOT_KEYS_OFF: HotKeysReport = Object.freeze({
  rejected: Object.freeze([]),
  nearLimit: Object.freeze([]),
  busy: Object.freeze([]),
  storeCalls: 0,
  windowMs: 0,
  size: 0,
  errorBound: 0,
});

const RESULT_COUNT = RESULTS.length;
/**
 * Per mode, the results (indices in RESULTS) a limiter's decisions can give whatever the request: their series
 * start at 0. `cost_exceeds_capacity` needs a cost above a capacity, and `limited` never comes in shadow mode.
 */
const KNOWN_RESULTS: Readonly<Record<'enforce' | 'shadow', readonly number[]>> = {
  enforce: (['allowed', 'limited', 'store_error'] as const).map((r) => RESULTS.indexOf(r)),
  shadow: (['allowed', 'shadow_limited', 'store_error'] as const).map((r) => RESULTS.indexOf(r)),
};
const STATE_NAMES: Readonly<Record<BreakerState, (typeof STORE_STATES)[number]>> = {
  closed: 'closed',
  'half-open': 'half_open',
  open: 'open',
};

/** The index in RESULTS of a decision's `tollgate.result` (`shed` is never a Decision: shed-observer.ts). */
export function resultIndex(d: Decision): number {
  if (d.reason === 'cost-exceeds-capacity') return 3;
  if (d.degraded) return 4;
  if (d.limited) return d.mode === 'shadow' ? 2 : 1;
  return 0;
}

/** The `tollgate.result` of a decision. */
export function resultOf(d: Decision): ResultName {
  return RESULTS[resultIndex(d)] as ResultName;
}

export interface ObserverSetup {
  /** The enforced policies of every plan (one per name), then the shadow policies, in order. */
  readonly policies: readonly CompiledPolicy[];
  readonly enforcedCount: number;
  /** True when the limiter was given plans (`plans`, one or more): decisions then carry `tollgate.plan`. */
  readonly plans: boolean;
  /** Per plan, the names of its enforced policies: the series a limiter with plans starts at 0. */
  readonly planPolicies: ReadonlyMap<string, readonly string[]>;
  readonly mode: 'enforce' | 'shadow';
  readonly storeKind: string;
  readonly clock: () => number;
  /** The hot-key sketches' size and epoch (`hotKeys` of the limiter's options), or false: none. */
  readonly hotKeys: Readonly<Required<HotKeysOptions>> | false;
  /** The limiter's `name`: the `tollgate.limiter` of its series, so two limiters of a process never share one. */
  readonly limiter: string | undefined;
  /**
   * Per plan and enforced policy (`nearKey`), the remaining at or below which an admission is near the
   * limit (NEAR_LIMIT_SHARE of that plan's capacity: plans that share a policy name differ in it).
   */
  readonly near: ReadonlyMap<string, number>;
}

/** The key of `near` for `policy` in plan `plan`. */
function nearKey(plan: string, policy: string): string {
  return `${plan}\n${policy}`;
}

/**
 * The observer's view of a limiter's plans (`plans`, compiled from `config.plans`): each enforced policy name
 * once (the largest capacity), then the shadow policies.
 */
export function observerSetup(plans: ReadonlyMap<string, CompiledPlan>, config: LimiterConfig, clock: () => number): ObserverSetup {
  const byName = new Map<string, CompiledPolicy>();
  const near = new Map<string, number>();
  const planPolicies = new Map<string, readonly string[]>();
  for (const cp of plans.values()) {
    const own = cp.all.slice(0, cp.enforcedCount);
    planPolicies.set(
      cp.name,
      own.map((p) => p.name),
    );
    for (const p of own) {
      const seen = byName.get(p.name);
      if (seen === undefined || p.capacity > seen.capacity) byName.set(p.name, p);
      near.set(nearKey(cp.name, p.name), p.capacity * NEAR_LIMIT_SHARE);
    }
  }
  const enforced = [...byName.values()];
  return {
    policies: [...enforced, ...config.shadowPolicies],
    enforcedCount: enforced.length,
    plans: config.plans.named,
    planPolicies,
    mode: config.mode,
    storeKind: config.store.kind,
    clock,
    hotKeys: config.hotKeys,
    limiter: config.name,
    near,
  };
}

export class DecisionObserver implements AttachedFollower {
  private readonly names: readonly string[];
  private readonly index = new Map<string, number>();
  /** Request-counter cells by plan, then route ('' for none): looked up, never built, per decision. */
  private readonly cells = new Map<string, Map<string, RequestCells>>();
  private readonly routes = new BoundedRoutes();
  /** The cells of decisions with no route and no plan (direct `check()` calls, single-plan limiters). */
  private readonly plainCells: RequestCells;
  private readonly singlePolicy: boolean;
  /** `plainCells.slots` when one policy and one plan make a result the only thing that picks the cell. */
  private readonly plainSlots: (CounterCell | undefined)[] | undefined;
  private readonly shadowCells: (CounterCell | undefined)[];
  private readonly delayCells = new Map<string, HistogramCell>();
  // `declare` on the three fields `observe` reads: without it, ES2022 class fields are defined as
  // undefined before the constructor assigns them, the assignment makes V8 treat them as mutable and
  // of any type, and `observe` loads and tests each. Assigned once, V8 folds them into its code.
  declare private readonly hot: HotKeys;
  /** False with hot keys off (the default): `hot` then exists (so that `observe` sees one shape) but is never fed. */
  declare private readonly hotOn: boolean;
  private readonly shadow: readonly ShadowPolicyTracker[];
  declare private readonly hasShadow: boolean;
  /** metric-store's `exporters`, held in a field: reading it skips the check that an imported binding is initialized. */
  private readonly watch = exporters;
  /** Near-limit thresholds: the single policy's, and the largest over the enforced ones (a prefilter). */
  private readonly nearSingle: number;
  declare private readonly nearMax: number;
  private lastNow = 0;
  /** The limiter's clock, for what has no decision time at hand: a clock that throws or misbehaves now keeps the last good time. */
  readonly now = (): number => {
    try {
      const t = this.setup.clock();
      if (Number.isFinite(t)) this.lastNow = t;
    } catch {
      // The decision is made; a bad clock must not turn it into an error.
    }
    return this.lastNow;
  };
  /** Breaker state per store node; a store that does not tell nodes apart is one node, WHOLE_STORE. */
  private readonly states = new Map<string, BreakerState>([[WHOLE_STORE, 'closed']]);
  private readonly gauge: () => GaugePoint[];
  private readonly stopGauge: () => void;
  /** The limiter label of every series this observer writes: none for a limiter without a name. */
  private readonly mine: Labels;
  /** Set by `close()`: an exporter attached later does not bring a closed limiter's series back. */
  private closed = false;

  constructor(private readonly setup: ObserverSetup) {
    const { policies, enforcedCount } = setup;
    const clock = this.now;
    this.mine = limiterLabel(setup.limiter);
    this.names = policies.map((p) => p.name);
    policies.forEach((p, i) => {
      this.index.set(p.name, i);
    });
    this.plainCells = new RequestCells(undefined, undefined, policies.length);
    this.singlePolicy = policies.length === 1;
    this.plainSlots = this.singlePolicy && !setup.plans ? this.plainCells.slots : undefined;
    this.shadowCells = new Array(policies.length * SHADOW_VERDICTS.length);
    const hot = setup.hotKeys;
    this.hotOn = hot !== false;
    this.hot = hot === false ? new HotKeys(1, 1, clock) : new HotKeys(hot.size, hot.epochMs, clock);
    this.shadow = policies.slice(enforcedCount).map((p) => new ShadowPolicyTracker(p.name, SHADOW_INTERVAL_MS, SHADOW_RING));
    this.hasShadow = this.shadow.length > 0;
    const nears = new Set(setup.near.values());
    this.nearMax = Math.max(0, ...nears);
    // One threshold for every plan and policy: no lookup per decision.
    this.nearSingle = nears.size === 1 ? this.nearMax : -1;
    this.gauge = () => {
      const points: GaugePoint[] = [];
      for (const [node, state] of this.states) {
        for (const s of STORE_STATES) {
          const labels =
            node === WHOLE_STORE
              ? { storeKind: setup.storeKind, storeState: s, ...this.mine }
              : { storeKind: setup.storeKind, storeState: s, storeNode: node, ...this.mine };
          points.push({ labels, value: STATE_NAMES[state] === s ? 1 : 0 });
        }
      }
      return points;
    };
    this.stopGauge = addGaugeSource('storeState', this.gauge);
    probeMeterProvider();
    followAttached(this);
  }

  /** Whether an exporter is attached, at creation and at each change (metric-store.ts `followAttached`). */
  follow(attached: boolean): void {
    if (attached && !this.closed) this.zeroKnown();
  }

  /**
   * Creates at 0 the series known before any decision: each enforced policy's results (per plan when the
   * limiter has plans) and each shadow policy's verdicts. Prometheus takes a series whose first sample is
   * already N for no increase, so a burst on series that did not exist yet never reached `increase()` or `rate()`.
   */
  private zeroKnown(): void {
    if (this.setup.plans) for (const plan of this.setup.planPolicies.keys()) this.cellsFor(undefined, plan);
    else this.zeroCells(this.plainCells);
    for (let i = this.setup.enforcedCount; i < this.names.length; i++) {
      for (let v = 0; v < SHADOW_VERDICTS.length; v++) this.shadowCell(i, this.names[i] as string, v);
    }
  }

  /** Creates at 0 the cells of `cells` not made yet: each enforced policy of its plan by each known result. */
  private zeroCells(cells: RequestCells): void {
    const { mode, planPolicies, enforcedCount } = this.setup;
    const policies = cells.plan === undefined ? this.names.slice(0, enforcedCount) : (planPolicies.get(cells.plan) ?? []);
    for (const policy of policies) {
      const index = this.singlePolicy ? 0 : (this.index.get(policy) ?? -1);
      if (index < 0) continue;
      for (const result of KNOWN_RESULTS[mode]) {
        const slot = index * RESULT_COUNT + result;
        if (cells.slots[slot] === undefined) this.requestCell(cells, slot, policy, result, mode);
      }
    }
  }

  /**
   * Feeds every consumer with `d`, decided at `at` (the limiter's clock); returns it. `options` carries the route and request of an HTTP request.
   * A direct `check()` with no shadow policy, no channel subscriber and no TracerProvider needs at most the hot-key
   * sketches when they are on, which sample heavy streams (hot-keys.ts: most decisions over or near the
   * limit cost a decrement), and, with an exporter attached, one add to its request counter. Kept this small on
   * purpose: the limiter inlines it in `decideNow`, whose inlining budget it shares (limiter/decide.ts, `Decider.decideAt`).
   */
  observe(d: Decision, options: CheckOptions | undefined, at: number): Decision {
    // `=== true`: V8 cannot tell these fields hold booleans, and a bare `if (x)` compiles to a full truthiness test.
    if (options !== undefined || this.hasShadow === true || decisionChannel.hasSubscribers || this.watch.tracing === true)
      return this.observeAll(d, options, at);
    if (this.hotOn === true) this.hotKey(d, at);
    if (this.watch.attached === true) this.countPlain(d);
    return d;
  }

  /**
   * A decision over or near the limit, for the hot-key sketches, unless sampling passes over it (a gap
   * drawn in this epoch: the first decision of a new one is always counted). The countdown here, the count out of line: a call made at most 1 time in 16 stays out of its callers' optimized
   * code, whose inlined size V8 charges to every caller that would inline them in turn.
   */
  private hotKey(d: Decision, at: number): void {
    const hot = this.hot;
    if (hot.busySkip > 0 && at < hot.epochEnd) hot.busySkip -= 1;
    else hot.decided(d.key, d.policy, at);
    if (d.limited !== true && d.remaining > this.nearMax) return;
    if (hot.skip > 0 && at < hot.epochEnd) hot.skip -= 1;
    else this.countHot(d, at);
  }

  /** A decision that waited for a store call (decide.ts, the settled call): counted for `hotKeys().busy`. */
  storeCalled(d: Decision, at: number): void {
    if (this.hotOn === true) this.hot.storeCall(d.key, at);
  }

  /** `hotKey` once sampling has picked `d`. */
  private countHot(d: Decision, at: number): void {
    // Under the binding policy's own key: a decision over several keys names the one over (or near) its limit.
    if (d.reason === 'limited') {
      this.hot.rejected(DecisionImpl.bindingKeyOf(d), d.policy, at);
    } else if (!d.limited) {
      const near = this.nearSingle >= 0 ? this.nearSingle : (this.setup.near.get(nearKey(d.plan ?? '', d.policy)) ?? -1);
      if (d.remaining <= near) this.hot.near(DecisionImpl.bindingKeyOf(d), d.policy, d.remaining, at);
    }
  }

  /** Counts a decision with no route: one add when one policy and one plan make its result the only thing that picks the cell. */
  private countPlain(d: Decision): void {
    const cell = this.plainSlots === undefined ? undefined : this.plainSlots[resultIndex(d)];
    if (cell === undefined || d.delayMs > 0) this.count(d, undefined);
    else cell.value += 1;
  }

  private observeAll(d: Decision, options: CheckOptions | undefined, at: number): Decision {
    if (this.hotOn) this.hotKey(d, at);
    if (this.hasShadow && d.shadow !== undefined) this.recordShadow(d, at);
    if (this.watch.attached) this.count(d, options);
    if (decisionChannel.hasSubscribers) {
      const { storeKind: store, limiter } = this.setup;
      const message: DecisionMessage = { decision: d, request: options?.request, route: options?.route, store, limiter };
      decisionChannel.publish(message);
    }
    // A check called straight (a worker's job) annotates the span active where it runs, as a request's does.
    if (this.watch.tracing === true || options?.request !== undefined) this.annotateSpan(d);
    return d;
  }

  /** The breaker of the store node `node` moved to `state`. Nodes are few (connections, Cluster masters). */
  storeState(state: BreakerState, node: string): void {
    if (node !== WHOLE_STORE) this.states.delete(WHOLE_STORE);
    this.states.set(node, state);
  }

  hotKeys(n: number): HotKeysReport {
    return this.hotOn ? this.hot.report(n) : HOT_KEYS_OFF;
  }

  shadowStats(): ShadowPolicyStats[] {
    if (this.shadow.length === 0) return [];
    const now = this.now();
    return this.shadow.map((t) => t.snapshot(now));
  }

  resetStats(): void {
    if (this.shadow.length === 0) return;
    const now = this.now();
    for (const t of this.shadow) t.reset(now);
  }

  close(): void {
    this.closed = true;
    this.stopGauge();
  }

  private recordShadow(d: Decision, at: number): void {
    const verdict = d.shadow;
    if (verdict === undefined) return;
    const enforcedBlocks = d.limited;
    const { enforcedCount } = this.setup;
    for (let i = 0; i < this.shadow.length; i++) {
      const r = verdict.policies[i];
      if (r === undefined) continue;
      const shadowBlocks = !r.allowed;
      const key = verdict instanceof Verdict ? verdict.keyOf(i, d.key) : d.key;
      (this.shadow[i] as ShadowPolicyTracker).record(key, shadowBlocks, enforcedBlocks, at);
      if (this.watch.attached) {
        const v = shadowBlocks ? (enforcedBlocks ? 1 : 2) : enforcedBlocks ? 3 : 0;
        this.shadowCell(enforcedCount + i, r.name, v).value += 1;
      }
    }
  }

  /** The verdict cell `v` (in SHADOW_VERDICTS) of the shadow policy at `index` (of `setup.policies`), named `policy`. */
  private shadowCell(index: number, policy: string, v: number): CounterCell {
    const slot = index * SHADOW_VERDICTS.length + v;
    let cell = this.shadowCells[slot];
    if (cell === undefined) {
      cell = counterCell('shadowVerdicts', { policy, shadowVerdict: SHADOW_VERDICTS[v], ...this.mine });
      this.shadowCells[slot] = cell;
    }
    return cell;
  }

  private count(d: Decision, options: CheckOptions | undefined): void {
    const result = resultIndex(d);
    const route = options?.route;
    const plan = this.setup.plans ? d.plan : undefined;
    const cells = route === undefined && plan === undefined ? this.plainCells : this.cellsFor(route, plan);
    const policy = this.singlePolicy ? 0 : (this.index.get(d.policy) ?? -1);
    const slot = policy < 0 ? -1 : policy * RESULT_COUNT + result;
    const cell = (slot < 0 ? undefined : cells.slots[slot]) ?? this.requestCell(cells, slot, d.policy, result, d.mode);
    cell.value += 1;
    // Shadow mode reports the delay enforcement would give, and gives none.
    if (d.delayMs > 0 && d.mode === 'enforce') this.recordDelay(d);
  }

  /** The request cell of `policy`'s `result` (index in RESULTS) in `cells`, kept in `slot` (none below 0: a policy not in the table). */
  private requestCell(cells: RequestCells, slot: number, policy: string, result: number, mode: 'enforce' | 'shadow'): CounterCell {
    const cell = counterCell('requests', {
      policy,
      result: RESULTS[result] as ResultName,
      mode,
      ...(cells.route === undefined ? {} : { route: cells.route }),
      ...(cells.plan === undefined ? {} : { plan: cells.plan }),
      ...this.mine,
    });
    if (slot >= 0) cells.slots[slot] = cell;
    return cell;
  }

  /** The delay under the policy that gave it (the longest, as `d.delayMs`), not the binding one, which may be a window. */
  private recordDelay(d: Decision): void {
    const policy = this.singlePolicy ? d.policy : shaperOf(d);
    let delay = this.delayCells.get(policy);
    if (delay === undefined) {
      delay = histogramCell('shapingDelay', { policy, ...this.mine });
      this.delayCells.set(policy, delay);
    }
    delay.record(d.delayMs / 1000);
    recordShapingDelay(d.delayMs / 1000, delay.attributes);
  }

  /** Two Map lookups; a route past the bound (bounded-routes.ts) counts under ROUTE_OVERFLOW and is not kept. */
  private cellsFor(route: string | undefined, plan: string | undefined): RequestCells {
    let byRoute = this.cells.get(plan ?? '');
    if (byRoute === undefined) {
      byRoute = new Map();
      this.cells.set(plan ?? '', byRoute);
    }
    const cells = byRoute.get(route ?? '');
    if (cells !== undefined) return cells;
    const bounded = route === undefined ? undefined : this.routes.of(route);
    const key = bounded ?? '';
    let made = byRoute.get(key);
    if (made === undefined) {
      made = new RequestCells(bounded, plan, this.names.length);
      byRoute.set(key, made);
      // First sight of this route (or plan): its other results start at 0 beside the first decision's, so
      // the route's first rejection is an increase. Bounded by the routes kept, and never again per route.
      this.zeroCells(made);
    }
    return made;
  }

  private annotateSpan(d: Decision): void {
    const span = recordingSpan();
    if (span === undefined) return;
    span.addEvent('tollgate.decision', {
      'tollgate.policy': d.policy,
      'tollgate.result': resultOf(d),
      'tollgate.mode': d.mode,
      'tollgate.remaining': d.remaining,
      'tollgate.retry_after_ms': d.retryAfterMs,
      'tollgate.degraded': d.degraded,
      ...limiterAttribute(this.setup.limiter),
    });
  }
}

/** The enforced policy whose delay is the decision's (the longest); the binding policy if none matches. */
function shaperOf(d: Decision): string {
  for (const p of d.policies) if (p.delayMs === d.delayMs) return p.name;
  return d.policy;
}
