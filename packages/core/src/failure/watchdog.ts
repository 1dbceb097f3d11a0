/**
 * @module The "no answer in time" watchdog: one timer per limiter (armed only while calls are pending),
 * not one per call, judging each store node (a connection, or a Cluster master) and each call on it.
 *
 * **Two rules, both blind to this process's own lag.**
 * - **Silent node.** A node fails when calls are pending on it and none of its calls has settled (a
 *   reply, or a reply error) for `storeTimeoutMs` of *time this process was able to read replies*: every
 *   call pending on it is answered by the failure mode at once (one outage event).
 * - **Late call.** A node that answers, but too slowly (replies trickling, every reply delayed), fails
 *   one call at a time: a call is answered by the failure mode once it has waited `storeTimeoutMs`, plus
 *   {@link QUEUED_CALL_MS} per call that was already pending on its node when it was sent (watched, or
 *   one nobody waits for: a charge given back, a lease released or put back, `aside`), of *time
 *   the event loop sat idle*. Idle time (libuv's, as `performance.eventLoopUtilization()` reports it) is
 *   time the process spent waiting for I/O with nothing else to do: a reply that arrived then was read at
 *   once. So a call never ages while the loop is blocked or busy draining a backlog of replies (the
 *   process is slow, not the store), and a burst this process sent itself is given the time the node
 *   needs to answer the calls ahead of it.
 *
 * How: the timer only asks for a judgement; the judgement runs in `setImmediate`, that is after the
 * event loop's poll phase has read whatever the sockets hold (replies that arrived while the loop was
 * blocked settle first). Silence grows by the time since the previous judgement, but by at most two
 * timer periods: a blocked loop (a 80 ms synchronous slice) adds one period's credit, not 80 ms, since
 * no reply could have been read meanwhile. Any reply on the node resets its silence; a call that fails
 * for want of the node (refused while the client reconnects) does not. A call's idle
 * wait is read from the idle clock at judgements only (no clock read per call): it counts from the first
 * judgement after the call was sent, so a call is answered at most {@link QUEUED_CALL_MS} per queued call
 * plus `storeTimeoutMs` plus two periods after it was sent, when the loop was idle all that time.
 * Replies that come after the watchdog answered are ignored for the decision.
 */
import { performance as perfHooks } from 'node:perf_hooks';

/**
 * The idle time a call may wait, on top of `storeTimeoutMs`, per call already pending on its node when
 * it was sent, ms: the time a healthy Redis needs for one script call, with a margin (a backlog of 5,000
 * calls took ~35 µs of idle time each on a loaded 2-core machine).
 */
export const QUEUED_CALL_MS = 0.1;

/** How many judgements of the idle clock are kept: calls older than this read the oldest one kept. */
const IDLE_HISTORY = 256;

/**
 * Why the watchdog answered a call: its node went silent, or it alone waited too long; `'overtaken'`, it
 * waited too long while the node answered calls sent after it (a node answers one connection's calls in
 * order, so the client sent this one again: a Cluster redirection, a `TRYAGAIN` of a slot being moved):
 * the call's own fault, not the node's.
 */
export type Overdue = 'silent' | 'late' | 'overtaken';

/**
 * One call being watched: a link in its node's list of pending calls (a list, not a Set, so that
 * watching and settling a call cost no hashing and no allocation beyond the ticket itself).
 */
export class Ticket {
  /** Settled (`true`) either by the store or by the watchdog. */
  done = false;
  prev: Ticket | undefined = undefined;
  next: Ticket | undefined = undefined;

  constructor(
    readonly watch: NodeWatch,
    readonly onOverdue: (why: Overdue) => void,
    /** Judgements made before the call was sent. */
    readonly epoch: number,
    /** The idle time the call may wait, ms. */
    readonly allowanceMs: number,
    /** Its place among the calls sent to its node. */
    readonly sent: number,
  ) {}
}

class NodeWatch {
  /** The calls pending on this node, newest first (oldest last), and how many. */
  head: Ticket | undefined = undefined;
  tail: Ticket | undefined = undefined;
  size = 0;
  /** Calls in flight on this node that nobody waits for (Watchdog.aside): not watched, but queued ahead. */
  aside = 0;
  /** Counts silent judgements: an aside call sent before the last one no longer counts when it settles. */
  asideEpoch = 0;
  /** A call of this node settled since the last judgement. */
  heard = false;
  /** Calls sent to this node so far, and the latest place (`Ticket.sent`) of one it answered. */
  sent = 0;
  answeredUpTo = -1;
  /** Readable time without any settlement while calls were pending, ms. */
  silentMs = 0;
  /** When the node went from idle to pending (performance.now). */
  since = 0;

  constructor(readonly node: string) {}

  add(ticket: Ticket): void {
    const head = this.head;
    ticket.next = head;
    if (head !== undefined) head.prev = ticket;
    else this.tail = ticket;
    this.head = ticket;
    this.size += 1;
  }

  remove(ticket: Ticket): void {
    const { prev, next } = ticket;
    if (prev === undefined) this.head = next;
    else prev.next = next;
    if (next === undefined) this.tail = prev;
    else next.prev = prev;
    ticket.prev = undefined;
    ticket.next = undefined;
    this.size -= 1;
  }

  /** Empties the list: its calls, oldest first. */
  drain(): Ticket[] {
    const out: Ticket[] = [];
    for (let t = this.tail; t !== undefined; ) {
      const prev = t.prev;
      t.prev = undefined;
      t.next = undefined;
      out.push(t);
      t = prev;
    }
    this.head = undefined;
    this.tail = undefined;
    this.size = 0;
    return out;
  }
}

/** The process's event-loop idle time so far, ms (from node:perf_hooks: fake timers leave it real). */
function loopIdleMs(): number {
  return perfHooks.eventLoopUtilization().idle;
}

export class Watchdog {
  private readonly nodes = new Map<string, NodeWatch>();
  private readonly periodMs: number;
  private readonly creditMs: number;
  private timer: ReturnType<typeof setInterval> | undefined;
  private judging = false;
  private lastJudgement = 0;
  private active = 0;
  /** Judgements made so far, and the credited idle clock at each of the last IDLE_HISTORY. */
  private epoch = 0;
  private readonly idleAt = new Float64Array(IDLE_HISTORY);
  /** Idle time credited so far, and the loop's own idle clock at the last judgement (NaN: not read yet). */
  private idleCredited = 0;
  private idleRead = Number.NaN;

  /**
   * `elapsed`: a monotonic clock in ms; `idle`: the event loop's idle time so far in ms (tests pass
   * their own to play a blocked or an idle event loop).
   */
  constructor(
    private readonly timeoutMs: number,
    private readonly elapsed: () => number = () => performance.now(),
    private readonly idle: () => number = loopIdleMs,
  ) {
    // Five judgements per timeout (10 ms at the default 50 ms), at least 1 ms, at most 50 ms apart.
    this.periodMs = Math.min(50, Math.max(1, Math.floor(timeoutMs / 5)));
    this.creditMs = this.periodMs * 2;
  }

  /** Starts watching a call on `node`; `onOverdue` answers it if the node goes silent or the call is late first. */
  watch(node: string, onOverdue: (why: Overdue) => void): Ticket {
    const w = this.nodeWatch(node);
    // The clock is read only when a node goes from idle to pending (or the timer starts), not per call.
    if (w.size === 0) {
      w.silentMs = 0;
      w.heard = false;
      w.since = this.elapsed();
      this.active += 1;
    }
    const ticket = new Ticket(w, onOverdue, this.epoch, this.timeoutMs + (w.size + w.aside) * QUEUED_CALL_MS, w.sent++);
    w.add(ticket);
    if (this.timer === undefined) {
      this.lastJudgement = this.elapsed();
      this.idleRead = Number.NaN;
      this.timer = setInterval(() => this.tick(), this.periodMs);
      this.timer.unref?.();
    }
    return ticket;
  }

  /**
   * A call on `node` that nobody waits for (a charge given back, a lease released or put back): not
   * judged, but until it settles the calls sent after it are given the time the node needs for it
   * ({@link QUEUED_CALL_MS}), as for a watched call ahead of them; its reply is heard from the node.
   */
  aside(node: string, call: PromiseLike<unknown>): void {
    const w = this.nodeWatch(node);
    w.aside += 1;
    const epoch = w.asideEpoch;
    // A node judged silent forgets its aside calls, as it answers its watched ones: one that never
    // settles must not widen every later call's allowance for ever.
    const settled = () => {
      if (w.asideEpoch === epoch) w.aside -= 1;
    };
    call.then(() => {
      settled();
      w.heard = true;
    }, settled);
  }

  private nodeWatch(node: string): NodeWatch {
    let w = this.nodes.get(node);
    if (w === undefined) {
      w = new NodeWatch(node);
      this.nodes.set(node, w);
    }
    return w;
  }

  /**
   * The store settled the call: true when it is still the store's to answer, false when the watchdog
   * answered it already (a late reply). `heard`: the node replied (a result, or an error about one key's
   * state), which resets its silence; a failure the client raised itself (not connected, the connection
   * closed) or one that says the node cannot serve does not: with a killed server the client refuses each
   * new call at once while the calls it had sent hang, and those refusals must not keep them waiting.
   */
  settle(ticket: Ticket, heard = true): boolean {
    const w = ticket.watch;
    if (heard) {
      w.heard = true;
      if (ticket.sent > w.answeredUpTo) w.answeredUpTo = ticket.sent;
    }
    if (ticket.done) return false;
    ticket.done = true;
    w.remove(ticket);
    if (w.size === 0) this.active -= 1;
    return true;
  }

  /** Calls pending on `node` (for tests and stats). */
  pendingOn(node: string): number {
    return this.nodes.get(node)?.size ?? 0;
  }

  private tick(): void {
    if (this.judging) return;
    this.judging = true;
    // After the poll phase: replies that sat in a socket buffer while the loop was busy settle first.
    setImmediate(() => this.judge());
  }

  private judge(): void {
    this.judging = false;
    const t = this.elapsed();
    const sinceLast = t - this.lastJudgement;
    const credit = Math.max(0, Math.min(sinceLast, this.creditMs));
    this.lastJudgement = t;
    this.epoch += 1;
    const idleNow = this.creditIdle(sinceLast);
    this.idleAt[this.epoch % IDLE_HISTORY] = idleNow;
    for (const w of this.nodes.values()) {
      if (w.size === 0) continue;
      if (w.heard) {
        w.heard = false;
        w.silentMs = 0;
      } else {
        w.silentMs += Math.min(credit, Math.max(0, t - w.since));
        if (w.silentMs >= this.timeoutMs) {
          this.overdue(w, w.drain(), 'silent');
          continue;
        }
      }
      const late = this.lateCalls(w, idleNow);
      if (late !== undefined) this.overdue(w, late, 'late');
    }
    if (this.active === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /**
   * Advances the credited idle clock by the loop's idle time since the last judgement, scaled by how
   * punctual the judgement was: a timer that fires late while the loop idled means this process waited
   * for a CPU (a saturated host, where the store, starved as well, is slow for the same reason), so that
   * idle time counts at the rate the timer kept (10 ms late on a 10 ms period: half).
   */
  private creditIdle(sinceLast: number): number {
    const raw = this.idle();
    const idled = Number.isNaN(this.idleRead) ? 0 : Math.max(0, raw - this.idleRead);
    this.idleRead = raw;
    const punctual = sinceLast <= this.periodMs ? 1 : this.periodMs / sinceLast;
    this.idleCredited += idled * punctual;
    return this.idleCredited;
  }

  /** The calls of `w` that waited their allowance of idle time, taken off its list; undefined if none. */
  private lateCalls(w: NodeWatch, idleNow: number): Ticket[] | undefined {
    let late: Ticket[] | undefined;
    const epoch = this.epoch;
    // Oldest first; a call sent since the previous judgement has no idle wait to read yet.
    for (let ticket = w.tail; ticket !== undefined && ticket.epoch + 1 < epoch; ) {
      const newer = ticket.prev;
      // The idle clock at the first judgement after the call was sent (or the oldest one kept).
      const from = Math.max(ticket.epoch + 1, epoch - IDLE_HISTORY + 1);
      if (idleNow - (this.idleAt[from % IDLE_HISTORY] as number) >= ticket.allowanceMs) {
        w.remove(ticket);
        if (late === undefined) late = [];
        late.push(ticket);
      }
      ticket = newer;
    }
    return late;
  }

  /** Answers `tickets` of `w` by the failure mode: `why` says whether the node was silent or the calls late. */
  private overdue(w: NodeWatch, tickets: readonly Ticket[], why: Overdue): void {
    if (why === 'silent') {
      w.silentMs = 0;
      w.aside = 0;
      w.asideEpoch += 1;
    }
    if (w.size === 0) this.active -= 1;
    for (const ticket of tickets) ticket.done = true;
    // A late call the node answered calls past (sent after it) is its own fault, not the node's.
    for (const ticket of tickets) ticket.onOverdue(why === 'late' && ticket.sent < w.answeredUpTo ? 'overtaken' : why);
  }

  /**
   * Stops the timer, once no call is pending: a check already on its way when its limiter closes is still
   * answered in time, by the failure mode if the store stays silent (the judgement that finds nothing
   * pending stops the timer).
   */
  close(): void {
    if (this.active > 0) return;
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}
