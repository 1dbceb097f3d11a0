/**
 * @module The "no answer" watchdog: one timer per limiter (armed only while calls are pending), not one
 * per call, judging each store node (a connection, or a Cluster master) as a whole.
 *
 * **What counts as "the store is slow".** A node fails when calls are pending on it and none of its
 * calls has settled (a reply, or a reply error) for `storeTimeoutMs` of *time this process was able to
 * read replies*. Nothing else: a reply that is late because this process's event loop was blocked, or
 * because a long pipeline is still draining while replies keep arriving, never fails anything.
 *
 * How: the timer only asks for a judgement; the judgement runs in `setImmediate`, that is after the
 * event loop's poll phase has read whatever the sockets hold (replies that arrived while the loop was
 * blocked settle first). Silence then grows by the time since the previous judgement, but by at most
 * two timer periods: a blocked loop (a 80 ms synchronous slice) adds one period's credit, not 80 ms,
 * since no reply could have been read meanwhile. Any settlement on the node resets its silence. When
 * the silence reaches the timeout, every call pending on that node is answered by the failure mode at
 * once (one outage event, however many calls were in flight); replies that come later are ignored for
 * the decision, but still prove the node alive.
 */

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
    readonly onSilent: () => void,
  ) {}
}

class NodeWatch {
  /** The calls pending on this node, newest first, and how many. */
  head: Ticket | undefined = undefined;
  size = 0;
  /** A call of this node settled since the last judgement. */
  heard = false;
  /** Readable time without any settlement while calls were pending, ms. */
  silentMs = 0;
  /** When the node went from idle to pending (performance.now). */
  since = 0;

  constructor(readonly node: string) {}

  add(ticket: Ticket): void {
    const head = this.head;
    ticket.next = head;
    if (head !== undefined) head.prev = ticket;
    this.head = ticket;
    this.size += 1;
  }

  remove(ticket: Ticket): void {
    const { prev, next } = ticket;
    if (prev === undefined) this.head = next;
    else prev.next = next;
    if (next !== undefined) next.prev = prev;
    ticket.prev = undefined;
    ticket.next = undefined;
    this.size -= 1;
  }

  /** Empties the list: its calls, oldest first. */
  drain(): Ticket[] {
    const out: Ticket[] = [];
    for (let t = this.head; t !== undefined; ) {
      const next = t.next;
      t.prev = undefined;
      t.next = undefined;
      out.push(t);
      t = next;
    }
    this.head = undefined;
    this.size = 0;
    return out.reverse();
  }
}

export class Watchdog {
  private readonly nodes = new Map<string, NodeWatch>();
  private readonly periodMs: number;
  private readonly creditMs: number;
  private timer: ReturnType<typeof setInterval> | undefined;
  private judging = false;
  private lastJudgement = 0;
  private active = 0;

  /** `elapsed`: a monotonic clock in ms (tests pass their own to play a blocked event loop). */
  constructor(
    private readonly timeoutMs: number,
    private readonly elapsed: () => number = () => performance.now(),
  ) {
    // Five judgements per timeout (10 ms at the default 50 ms), at least 1 ms, at most 50 ms apart.
    this.periodMs = Math.min(50, Math.max(1, Math.floor(timeoutMs / 5)));
    this.creditMs = this.periodMs * 2;
  }

  /** Starts watching a call on `node`; `onSilent` answers it if the node goes silent first. */
  watch(node: string, onSilent: () => void): Ticket {
    let w = this.nodes.get(node);
    if (w === undefined) {
      w = new NodeWatch(node);
      this.nodes.set(node, w);
    }
    // The clock is read only when a node goes from idle to pending (or the timer starts), not per call.
    if (w.size === 0) {
      w.silentMs = 0;
      w.heard = false;
      w.since = this.elapsed();
      this.active += 1;
    }
    const ticket = new Ticket(w, onSilent);
    w.add(ticket);
    if (this.timer === undefined) {
      this.lastJudgement = this.elapsed();
      this.timer = setInterval(() => this.tick(), this.periodMs);
      this.timer.unref?.();
    }
    return ticket;
  }

  /**
   * The store settled the call: true when it is still the store's to answer, false when the watchdog
   * answered it already (a late reply). Either way the node was heard.
   */
  settle(ticket: Ticket): boolean {
    const w = ticket.watch;
    w.heard = true;
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
    const credit = Math.max(0, Math.min(t - this.lastJudgement, this.creditMs));
    this.lastJudgement = t;
    for (const w of this.nodes.values()) {
      if (w.size === 0) continue;
      if (w.heard) {
        w.heard = false;
        w.silentMs = 0;
        continue;
      }
      w.silentMs += Math.min(credit, Math.max(0, t - w.since));
      if (w.silentMs < this.timeoutMs) continue;
      const silent = w.drain();
      w.silentMs = 0;
      this.active -= 1;
      for (const ticket of silent) ticket.done = true;
      for (const ticket of silent) ticket.onSilent();
    }
    if (this.active === 0 && this.timer !== undefined) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  /** Stops the timer; pending calls are left to the store. */
  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    this.timer = undefined;
  }
}
