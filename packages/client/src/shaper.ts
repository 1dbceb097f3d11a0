/**
 * @module `createShaper(options)`: outbound shaping on the core's exact algorithms. Tasks wait in a
 * bounded priority queue; one loop per shaper asks the limiter for the task at the head
 * (`limiter.check(key, { cost })`) and, when refused, sleeps exactly the decision's `retryAfterMs`
 * (the core's contract: after that wait the same request is admitted, unless someone else took the
 * budget first). With a `RedisStore` every process's checks go through one Lua script on one clock
 * (Redis `TIME`), so 10/s held by four processes is 10/s in total.
 *
 * A task starts only while its deadline (`maxDelayMs` from `schedule`) has not passed: one whose wait
 * would end after its deadline is rejected with `ERR_RL_TASK_EXPIRED` as soon as that is known, and the
 * clock is read again right before every start, so a task whose timer fired late (a blocked event loop)
 * is rejected too, never run late. A task cancelled through its `signal` leaves the queue at once and
 * frees its place; a charge taken for a task that went away while its check was in flight is refunded.
 *
 * Every shaper's limiter is named `SHAPER_NAME`: shapers on one store with the same key and policy names
 * share one budget on purpose (in one process or many), and no shaper's state meets an unnamed limiter's.
 * The shapers of one process on one such budget take turns once a head is refused (turns.ts), so a costly
 * task is not starved by another shaper's cheaper ones.
 */
import {
  type Clock,
  createLimiter,
  type Decision,
  type Limiter,
  type LimiterStats,
  type Logger,
  type PolicyOptions,
  RateLimitConfigError,
  type Store,
  type ValidateOption,
} from '@tollgate/core';
import { requestCostToMilli } from '@tollgate/core/adapter';
import { functionOption, integerIn, type KeysEnum, numberIn, oneOf, RateLimitClientError, readOptions } from './errors.js';
import { isAbortSignal } from './linked-signal.js';
import { sleep } from './sleep.js';
import { joinTurns, leaveTurns, type Turns } from './turns.js';

export interface ShaperOptions {
  /** The rate policies tasks are shaped by (one or several, all must admit a task), as in `createLimiter`. Required. */
  policies: PolicyOptions | readonly PolicyOptions[];
  /** Where the budget lives. Defaults to an in-process `MemoryStore`; a `RedisStore` shares it across processes. */
  store?: Store;
  /** The limiter key: shapers on one store with the same key and policy names share one budget. Defaults to `'shaper'`. */
  key?: string;
  /** Tasks waiting at most; `schedule` beyond that rejects with `ERR_RL_QUEUE_FULL`. Defaults to `1_000`. */
  maxQueue?: number;
  /** The default deadline of a task, in ms from `schedule`: not started by then, it is rejected. Defaults to `60_000`. */
  maxDelayMs?: number;
  /** What a check does when the store fails: the core's `onStoreError` (`'local'`, `'open'`, `'closed'`). Defaults to `'local'`. */
  onStoreError?: 'local' | 'open' | 'closed';
  /** With `onStoreError: 'local'`, the share of each limit this process allows alone, in (0, 1]. Defaults to `1`. */
  localShare?: number;
  /**
   * How long the store may stay silent before a check counts as failed (the core's `storeTimeoutMs`).
   * A shaper is off the request path, and a check that fails over to `'local'` loses the shared budget,
   * so the default is more patient than the middleware's 50 ms; but tasks are decided one at a time, and
   * while Redis hangs the breaker's probe (about one check a second) holds the whole queue this long, so
   * not much more (with 1 s the queue ran at a third of its rate). Defaults to `200`.
   */
  storeTimeoutMs?: number;
  /** Integer ms for deadlines and the in-process store. Defaults to the core's monotonic clock. */
  clock?: Clock;
  /** Where the shaper's limiter writes its warnings and errors (an outage, a breaker), pino-style. Defaults to `console`. */
  logger?: Logger;
  /** `false`, or an object by code, silences the limiter's warnings, as the core's `validate`. Defaults to `true`. */
  validate?: ValidateOption;
}

export interface ScheduleOptions {
  /** The task's cost in policy units, as `check(key, { cost })`. Defaults to `1`. */
  cost?: number;
  /** Higher runs first; equal priorities run in the order scheduled. An integer. Defaults to `0`. */
  priority?: number;
  /** Aborting it takes the task out of the queue (rejecting with the signal's reason). A started task is not interrupted. */
  signal?: AbortSignal;
  /** This task's deadline, in ms from now. Defaults to the shaper's `maxDelayMs`. */
  maxDelayMs?: number;
}

/** Counters and gauges of one shaper since it was made. */
export interface ShaperStats {
  /** Tasks waiting now (the queue length). */
  readonly queued: number;
  /** Tasks started and not yet settled. */
  readonly running: number;
  readonly started: number;
  /** Tasks rejected, by why. */
  readonly rejected: {
    readonly queueFull: number;
    readonly expired: number;
    readonly cancelled: number;
    readonly tooCostly: number;
    readonly storeError: number;
    readonly closed: number;
  };
  /** How long started tasks waited between `schedule` and their start, in ms. */
  readonly delay: { readonly count: number; readonly totalMs: number; readonly maxMs: number };
  /** The limiter's own stats (decisions, degraded answers). */
  readonly limiter: LimiterStats;
}

export interface Shaper {
  /** Queues `fn` and runs it once the policies admit it; resolves or rejects with its outcome. */
  schedule<T>(fn: () => T | Promise<T>, options?: ScheduleOptions): Promise<T>;
  stats(): ShaperStats;
  /** The limiter deciding the tasks (for `peek`, `on('store-error')`, ...). */
  readonly limiter: Limiter;
  /** Rejects every waiting task with `ERR_RL_SHAPER_CLOSED`, refuses new ones, and closes the limiter (and the store, when the shaper made it). */
  close(): Promise<void>;
}

interface Task {
  readonly run: () => unknown;
  readonly cost: number;
  readonly priority: number;
  readonly seq: number;
  readonly enqueuedAt: number;
  readonly deadline: number;
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
  /**
   * 'queued' in the queue, 'deciding' while its check is in flight, 'delayed' once a leaky-bucket policy
   * admitted it with a delay (out of the queue, its slot charged), then settled.
   */
  state: 'queued' | 'deciding' | 'delayed' | 'done';
  cleanup: () => void;
  /** The timer that expires the task at its deadline while it waits in the queue. */
  expiry?: ReturnType<typeof setTimeout>;
  /** While 'delayed': the timer that starts it. */
  delayTimer?: ReturnType<typeof setTimeout>;
  /** Its deadline passed while its check was in flight: the answer decides (admitted at once, it starts). */
  overdue?: boolean;
}

const KNOWN: KeysEnum<ShaperOptions> = {
  policies: true,
  store: true,
  key: true,
  maxQueue: true,
  maxDelayMs: true,
  onStoreError: true,
  localShare: true,
  storeTimeoutMs: true,
  clock: true,
  logger: true,
  validate: true,
};
const SCHEDULE_KNOWN: KeysEnum<ScheduleOptions> = { cost: true, priority: true, signal: true, maxDelayMs: true };
const DAY = 86_400_000;

/**
 * The core limiter name of every shaper: part of its key names, so shapers with the same key and policy
 * names share one budget on purpose, and the core's guard against two unnamed limiters sharing state by
 * accident (`ERR_RL_SHARED_STATE`) still holds between everything else.
 */
const SHAPER_NAME = 'tollgate-shaper';

/** How often a shaper waiting behind another on a shared budget looks at the line again without being told, ms. */
const TURN_RECHECK_MS = 1_000;

/** `value` when it is a cost the core accepts (a positive multiple of 1/1000, or one past any capacity); else `ERR_RL_INVALID_COST`. */
function readCost(value: unknown): number {
  if (typeof value === 'number' && Number.isFinite(value) && requestCostToMilli(value) > 0) return value;
  throw new RateLimitConfigError('ERR_RL_INVALID_COST', 'cost', 'must be a positive finite multiple of 1/1000, e.g. 1 or 2.5', value);
}

/** What `createShaper` reads from its options, checked. */
interface ShaperSetup {
  readonly key: string;
  readonly maxQueue: number;
  readonly defaultDelay: number;
  readonly limiter: Limiter;
  readonly now: Clock;
  /** The store the caller gave, whose budget other shapers of this process may share; undefined for the shaper's own. */
  readonly store: Store | undefined;
  /** The line of the shapers of this process on the same budget (only with a store given). */
  readonly turns: Turns | undefined;
}

function readShaperOptions(options: ShaperOptions): ShaperSetup {
  const o = readOptions(options, KNOWN, 'options', '{ policies: { limit: 10, windowMs: 1_000 }, store: new RedisStore({ client }) }');
  // Checked here, not by createLimiter, whose message also suggests `plans`, which a shaper does not take.
  if (o.policies === undefined || (Array.isArray(o.policies) && o.policies.length === 0)) {
    throw new RateLimitConfigError(
      'ERR_RL_NO_POLICIES',
      'policies',
      "is required: one rate policy or a list, e.g. { algorithm: 'sliding-log', limit: 10, windowMs: 1_000 }",
      o.policies,
    );
  }
  for (const p of [o.policies].flat()) {
    if ((p as { algorithm?: string } | undefined)?.algorithm === 'concurrency') {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_OPTION',
        'policies',
        'must be rate policies: a shaper starts tasks, it does not hold leases',
        p,
      );
    }
  }
  const key = o.key ?? 'shaper';
  if (typeof key !== 'string' || key === '')
    throw new RateLimitConfigError('ERR_RL_INVALID_OPTION', 'key', "must be a non-empty string, e.g. 'sms-partner'", key);
  const maxQueue = o.maxQueue === undefined ? 1_000 : integerIn(o.maxQueue, 'maxQueue', 1, 10_000_000, 'e.g. 1_000');
  const defaultDelay = o.maxDelayMs === undefined ? 60_000 : integerIn(o.maxDelayMs, 'maxDelayMs', 0, DAY, 'e.g. 60_000');
  const clock = o.clock === undefined ? freshClock : functionOption<Clock>(o.clock, 'clock', '() => Date.now()');
  const limiter = createLimiter({
    name: SHAPER_NAME,
    policies: o.policies as PolicyOptions[],
    store: o.store,
    clock,
    onStoreError: o.onStoreError === undefined ? undefined : oneOf(o.onStoreError, 'onStoreError', ['local', 'open', 'closed'] as const),
    localShare: o.localShare === undefined ? undefined : numberIn(o.localShare, 'localShare', Number.MIN_VALUE, 1, 'e.g. 0.25'),
    storeTimeoutMs: o.storeTimeoutMs === undefined ? 200 : integerIn(o.storeTimeoutMs, 'storeTimeoutMs', 1, DAY, 'e.g. 200'),
    logger: o.logger,
    validate: o.validate,
  });
  const store = o.store;
  return {
    key,
    maxQueue,
    defaultDelay,
    limiter,
    // Deadlines and decisions read one time.
    now: clock,
    store,
    turns: store === undefined ? undefined : joinTurns(store, key, limiter.policies),
  };
}

/**
 * The default clock: the core's monotonic time (`monotonicClock`'s origin), read at every call. Not the
 * core's per-turn reading, which the decisions of one event-loop turn share: a task starts in a microtask of
 * the turn that admitted it, so the next decision of that turn came after the task's synchronous work,
 * and judged on the time before it, the next task started past its deadline (500 ms past it), and a sliding
 * log started 17 in a second of 10. The shaper makes one decision at a time: a reading each costs nothing.
 */
const freshClock: Clock = () => Math.floor(performance.timeOrigin + performance.now());

/** Makes a shaper; see the module comment and the README. Options are checked here, once. */
export function createShaper(options: ShaperOptions): Shaper {
  const shaper = new TaskShaper(readShaperOptions(options));
  return {
    schedule: (fn, opts) => shaper.schedule(fn, opts),
    limiter: shaper.setup.limiter,
    stats: () => shaper.stats(),
    close: () => shaper.close(),
  };
}

/** The queue of tasks in priority order, and the loop that starts its head when the policy allows. */
class TaskShaper {
  private readonly queue: Task[] = [];
  /** Tasks a leaky-bucket policy admitted with a delay: waiting to start, no longer in the queue's order. */
  private readonly delayed = new Set<Task>();
  private seq = 0;
  private pumping = false;
  private closed = false;
  /** Ends the pump's sleep: when the head of the queue leaves or changes, and on close. */
  private nap: AbortController | undefined;
  /** Set by a wake: one that comes while the head's check is in flight (no nap to end yet) must not be lost. */
  private woken = false;
  private readonly counts = { started: 0, running: 0, queueFull: 0, expired: 0, cancelled: 0, tooCostly: 0, storeError: 0, closed: 0 };
  private readonly delay = { count: 0, totalMs: 0, maxMs: 0 };

  constructor(readonly setup: ShaperSetup) {}

  private remove(task: Task): void {
    const i = this.queue.indexOf(task);
    if (i >= 0) this.queue.splice(i, 1);
  }

  /** The pump sleeps for what its head asked: a new head may start sooner (or a task of a smaller cost fit). */
  private wake(): void {
    this.woken = true;
    this.nap?.abort();
  }

  private insert(task: Task): void {
    // Highest priority first, then first scheduled first.
    const queue = this.queue;
    let i = queue.length;
    while (i > 0) {
      const prev = queue[i - 1] as Task;
      if (prev.priority > task.priority || (prev.priority === task.priority && prev.seq < task.seq)) break;
      i--;
    }
    queue.splice(i, 0, task);
    if (i === 0) this.wake();
  }

  private settle(task: Task, error: unknown, counter: keyof TaskShaper['counts']): void {
    if (task.state === 'done') return;
    if (task.state === 'delayed') this.undelay(task);
    else if (this.queue[0] === task) this.wake();
    task.state = 'done';
    task.cleanup();
    this.remove(task);
    this.counts[counter]++;
    task.reject(error);
  }

  /**
   * A delayed task leaves before its start: its timer stops. Its slot stays spent: the tasks admitted after
   * it hold the slots after it, and giving it back would let the next task start beside one of them.
   */
  private undelay(task: Task): void {
    clearTimeout(task.delayTimer);
    this.delayed.delete(task);
  }

  private expire(task: Task, why: string): void {
    this.settle(task, new RateLimitClientError('ERR_RL_TASK_EXPIRED', why), 'expired');
  }

  /**
   * A queued task's deadline: it is rejected, unless its check is in flight, sent before the deadline:
   * then the answer decides (the store admitting it at once meets the deadline, anything else expires it).
   */
  private deadlinePassed(task: Task): void {
    if (task.state === 'deciding') task.overdue = true;
    else this.expire(task, `the task was not started within its deadline (${task.deadline - task.enqueuedAt} ms)`);
  }

  private start(task: Task): void {
    const { counts, delay } = this;
    task.state = 'done';
    task.cleanup();
    this.remove(task);
    this.delayed.delete(task);
    const waited = this.setup.now() - task.enqueuedAt;
    delay.count++;
    delay.totalMs += waited;
    delay.maxMs = Math.max(delay.maxMs, waited);
    counts.started++;
    counts.running++;
    Promise.resolve()
      .then(task.run)
      .then(task.resolve, task.reject)
      .finally(() => {
        counts.running--;
      });
  }

  /** Expires `task` if its deadline has passed (its timers fired late: a blocked event loop); true if so. */
  private expiredLate(task: Task): boolean {
    const late = this.setup.now() - task.deadline;
    if (late <= 0) return false;
    this.expire(task, `the task was not started within its deadline (${task.deadline - task.enqueuedAt} ms): it was ${late} ms late`);
    return true;
  }

  /** Starts `task` unless its deadline passed meanwhile; true if it started. */
  private startInTime(task: Task): boolean {
    if (this.expiredLate(task)) return false;
    this.start(task);
    return true;
  }

  /** Gives back what `decision` charged, if anything (a refused or uncharged decision has no receipt); never rejects. */
  private async giveBack(decision: Decision): Promise<void> {
    if (decision.receipt !== undefined) await this.setup.limiter.refund(decision).catch(() => undefined);
  }

  /** Decides the head task; returns how long the loop should sleep before the next check. */
  private async decideHead(task: Task): Promise<number> {
    const { limiter, key, now, turns } = this.setup;
    // Past its deadline before its expiry timer fired: rejected without a check, so nothing is charged.
    if (this.expiredLate(task)) return 0;
    // The task keeps its place in the queue (and counts against maxQueue) while its check is in flight.
    task.state = 'deciding';
    let decision: Decision;
    try {
      decision = await limiter.check(key, { cost: task.cost });
    } catch (error) {
      this.settle(task, error, 'tooCostly');
      return 0;
    }
    if (task.state !== 'deciding') {
      // Cancelled, expired or closed while the check was in flight: give the charge back.
      await this.giveBack(decision);
      return 0;
    }
    const refused = this.refusal(task, decision);
    if (refused) return 0;
    const wait = decision.allowed ? decision.delayMs : decision.retryAfterMs;
    if (decision.allowed && wait === 0) {
      turns?.leave(this);
      // The store admitted it at once on a check sent before its deadline: the deadline is met, however
      // long the answer took (a Redis round trip against `maxDelayMs: 0`). An answer of the failure mode
      // is a local admission, made when it came: the clock decides.
      if (decision.degraded && this.expiredLate(task)) await this.giveBack(decision);
      else this.start(task);
      return 0;
    }
    if (task.overdue || now() + wait > task.deadline) {
      await this.giveBack(decision);
      this.expire(
        task,
        `the task could not start within its deadline (${task.deadline - task.enqueuedAt} ms): the next slot is ${wait} ms away`,
      );
      return 0;
    }
    if (decision.allowed) {
      turns?.leave(this);
      // A leaky-bucket admission with a delay: the slot is this task's, started when the delay is over;
      // cancelled or closed before, it leaves at once (settle). Its deadline is met: the start fits before it.
      clearTimeout(task.expiry);
      task.state = 'delayed';
      this.remove(task);
      this.delayed.add(task);
      // Its slot stays spent if the timer fires past the deadline (see undelay).
      task.delayTimer = setTimeout(() => this.startInTime(task), wait);
      return 0;
    }
    // Refused: this shaper waits for the budget, and keeps its place among the shapers sharing it.
    turns?.join(this);
    task.state = 'queued';
    return wait;
  }

  /** Settles a task whose decision can never start it (a cost that never fits, a store that cannot decide); true if so. */
  private refusal(task: Task, decision: Decision): boolean {
    if (decision.reason === 'cost-exceeds-capacity') {
      this.settle(
        task,
        new RateLimitClientError('ERR_RL_TASK_TOO_COSTLY', `cost ${task.cost} can never fit policy '${decision.policy}'`),
        'tooCostly',
      );
      return true;
    }
    if (!decision.allowed && decision.reason === 'store-error') {
      this.settle(
        task,
        new RateLimitClientError('ERR_RL_SHAPER_STORE', 'the store could not decide and onStoreError is closed'),
        'storeError',
      );
      return true;
    }
    return false;
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    const { turns } = this.setup;
    try {
      while (!this.closed && this.queue.length > 0) {
        this.woken = false;
        if (turns !== undefined && !turns.mayCheck(this)) {
          // Another shaper on this budget was refused first: wait behind it, keeping this place.
          turns.join(this);
          await this.napUntil(TURN_RECHECK_MS, turns.next());
          continue;
        }
        const wait = await this.decideHead(this.queue[0] as Task);
        // A wake while the head's check was in flight (a task scheduled ahead of it, the head cancelled)
        // is not lost: the new head is decided now, not after the old head's wait.
        if (wait > 0 && !this.closed && !this.woken) await this.napUntil(wait, undefined);
      }
    } finally {
      this.pumping = false;
      // Nothing left to wait for: the shapers behind this one move up.
      if (this.closed || this.queue.length === 0) turns?.leave(this);
    }
  }

  /** Sleeps `ms`, or until `wake` settles, or until the queue's head changes (wake()). */
  private async napUntil(ms: number, wake: Promise<void> | undefined): Promise<void> {
    const nap = new AbortController();
    this.nap = nap;
    await sleep(ms, nap.signal, wake).catch(() => undefined);
    this.nap = undefined;
  }

  schedule<T>(fn: () => T | Promise<T>, opts?: ScheduleOptions): Promise<T> {
    const { maxQueue, defaultDelay, now } = this.setup;
    const run = functionOption<() => T | Promise<T>>(fn, 'fn', '() => sendSms(to, text)');
    const s = readOptions(opts, SCHEDULE_KNOWN, 'schedule options', '{ cost: 1, priority: 0, maxDelayMs: 5_000 }');
    const priority = s.priority === undefined ? 0 : integerIn(s.priority, 'priority', -1e6, 1e6, 'e.g. 0 (higher runs first)');
    const maxDelayMs = s.maxDelayMs === undefined ? defaultDelay : integerIn(s.maxDelayMs, 'maxDelayMs', 0, DAY, 'e.g. 5_000');
    const cost = s.cost === undefined ? 1 : readCost(s.cost);
    if (s.signal !== undefined && !isAbortSignal(s.signal)) {
      throw new RateLimitConfigError(
        'ERR_RL_INVALID_OPTION',
        'signal',
        'must be an AbortSignal, e.g. AbortSignal.timeout(5_000)',
        s.signal,
      );
    }
    if (this.closed) return Promise.reject(new RateLimitClientError('ERR_RL_SHAPER_CLOSED', 'schedule() was called after close()'));
    if (s.signal?.aborted) {
      this.counts.cancelled++;
      return Promise.reject(s.signal.reason);
    }
    const waiting = this.queue.length + this.delayed.size;
    if (waiting >= maxQueue) {
      this.counts.queueFull++;
      return Promise.reject(new RateLimitClientError('ERR_RL_QUEUE_FULL', `${waiting} tasks are waiting (maxQueue ${maxQueue})`));
    }
    return new Promise<T>((resolve, reject) => {
      const enqueuedAt = now();
      const task: Task = {
        run,
        cost,
        priority,
        seq: this.seq++,
        enqueuedAt,
        deadline: enqueuedAt + maxDelayMs,
        resolve: resolve as (value: unknown) => void,
        reject,
        state: 'queued',
        cleanup: () => undefined,
      };
      task.expiry = setTimeout(() => this.deadlinePassed(task), maxDelayMs);
      const onAbort = () => this.settle(task, s.signal?.reason, 'cancelled');
      s.signal?.addEventListener('abort', onAbort, { once: true });
      task.cleanup = () => {
        clearTimeout(task.expiry);
        s.signal?.removeEventListener('abort', onAbort);
      };
      this.insert(task);
      void this.pump();
    });
  }

  stats(): ShaperStats {
    const { counts } = this;
    return {
      queued: this.queue.length + this.delayed.size,
      running: counts.running,
      started: counts.started,
      rejected: {
        queueFull: counts.queueFull,
        expired: counts.expired,
        cancelled: counts.cancelled,
        tooCostly: counts.tooCostly,
        storeError: counts.storeError,
        closed: counts.closed,
      },
      delay: { ...this.delay },
      limiter: this.setup.limiter.stats(),
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.wake();
    for (const task of [...this.queue, ...this.delayed])
      this.settle(task, new RateLimitClientError('ERR_RL_SHAPER_CLOSED', 'the shaper was closed before the task started'), 'closed');
    const { store, turns, key, limiter } = this.setup;
    if (store !== undefined && turns !== undefined) {
      turns.leave(this);
      leaveTurns(store, key, limiter.policies, turns);
    }
    await limiter.close();
  }
}
