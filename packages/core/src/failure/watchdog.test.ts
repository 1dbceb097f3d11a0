import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Overdue, QUEUED_CALL_MS, Watchdog } from './watchdog.js';

/**
 * Fake timers, and two clocks the test moves by hand: the wall clock, and the event loop's idle time.
 * Moving the wall clock alone without running timers is a blocked loop; `run` is a loop that waits for
 * I/O (idle), `busy` one that runs its timers but works all the time (a backlog of replies to handle).
 */
function setup(timeoutMs = 50) {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'setTimeout', 'clearTimeout'] });
  let t = 0;
  let idle = 0;
  const dog = new Watchdog(
    timeoutMs,
    () => t,
    () => idle,
  );
  const silent: string[] = [];
  const why: Overdue[] = [];
  const watch = (node: string, name: string) =>
    dog.watch(node, (w) => {
      silent.push(name);
      why.push(w);
    });
  /** The loop runs freely for `ms`, idle: timers fire every ms of it. */
  const run = async (ms: number, idles = true) => {
    for (let i = 0; i < ms; i++) {
      t += 1;
      if (idles) idle += 1;
      await vi.advanceTimersByTimeAsync(1);
    }
  };
  const busy = (ms: number) => run(ms, false);
  /** The loop is blocked for `ms` (time passes, nothing runs), then runs for one period (10 ms). */
  const block = async (ms: number) => {
    t += ms;
    await run(10);
  };
  return { dog, silent, why, watch, run, busy, block };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('Watchdog', () => {
  it('fails a node after storeTimeoutMs of silence while a call is pending, within one period (10 ms)', async () => {
    const { silent, watch, run } = setup();
    watch('a', 'call');
    await run(49);
    expect(silent).toEqual([]);
    await run(11);
    expect(silent).toEqual(['call']);
  });

  it('a blocked loop counts at most two periods (20 ms) per judgement, however long the block', async () => {
    const { dog, silent, watch, block } = setup();
    const ticket = watch('a', 'call');
    // Two turns of 80 ms blocked + 10 ms free: 180 ms of wall time, 40 ms of silence counted.
    await block(80);
    await block(80);
    expect(silent).toEqual([]);
    // A reply read in the next turn resets the silence; two more blocked turns count 40 ms again.
    watch('a', 'next');
    dog.settle(ticket);
    await block(80);
    await block(80);
    await block(80);
    expect(silent).toEqual([]);
    // Nothing comes back for a third blocked turn: 60 ms counted, the node is silent.
    await block(80);
    expect(silent).toEqual(['next']);
  });

  it('any settlement on the node resets its silence: a backlog drained by a busy loop never fails', async () => {
    const { dog, silent, watch, busy } = setup();
    const tickets = Array.from({ length: 20 }, (_, i) => watch('a', `call${i}`));
    for (const ticket of tickets) {
      await busy(40);
      expect(dog.settle(ticket)).toBe(true);
    }
    expect(silent).toEqual([]);
  });

  it('calls refused without a reply (a killed server, the client reconnecting) do not reset the silence of those it had sent', async () => {
    const { dog, silent, why, watch, busy } = setup();
    watch('a', 'sent');
    // A busy loop (HTTP traffic) where every new call is refused at once: the sent call never ages by
    // idle time, so only the silence can answer it, 50 ms after the last reply.
    for (let i = 0; i < 12; i++) {
      await busy(5);
      expect(dog.settle(watch('a', `refused${i}`), false)).toBe(true);
    }
    expect(silent).toEqual(['sent']);
    expect(why).toEqual(['silent']);
    // A reply resets it as before.
    watch('a', 'next');
    for (let i = 0; i < 12; i++) {
      await busy(5);
      dog.settle(watch('a', `replied${i}`));
    }
    expect(silent).toEqual(['sent']);
  });

  it('a node that answers too slowly (replies trickling in while the loop idles) fails each call at its own deadline', async () => {
    const { dog, silent, why, watch, run } = setup();
    const tickets = Array.from({ length: 20 }, (_, i) => watch('a', `call${i}`));
    // One reply every 40 ms: never 50 ms of silence, but the calls behind wait longer and longer.
    const settled: boolean[] = [];
    for (const ticket of tickets.slice(0, 3)) {
      await run(40);
      settled.push(dog.settle(ticket));
    }
    // call0 came at 40 ms; call1 (allowance 50.1 ms of idle, counted from the first judgement after
    // it was sent, 10 ms in) at 80 ms was late, and so was everything behind it.
    expect(settled).toEqual([true, false, false]);
    expect(silent).toEqual(tickets.slice(1).map((_, i) => `call${i + 1}`));
    expect(new Set(why)).toEqual(new Set(['late']));
    expect(dog.pendingOn('a')).toBe(0);
  });

  it("a burst's calls get the node's time for the calls ahead of them: 0.1 ms of idle time per queued call", async () => {
    const { dog, silent, watch, run } = setup();
    const tickets = Array.from({ length: 1_001 }, (_, i) => watch('a', `call${i}`));
    // The last call may wait 50 + 1000 x 0.1 = 150 ms of idle time; replies keep the node from silence.
    for (let i = 0; i < 14; i++) {
      await run(10);
      for (const ticket of tickets.slice(i * 72, Math.min((i + 1) * 72, 1_000))) dog.settle(ticket);
    }
    expect(silent).toEqual([]);
    await run(10);
    expect(silent).toEqual([]);
    expect(QUEUED_CALL_MS).toBe(0.1);
    // Past its allowance, the one still pending is late.
    await run(30);
    expect(silent).toEqual(['call1000']);
  });

  it('calls nobody waits for (aside: give-backs, releases) count ahead of a call as watched ones do, until they settle', async () => {
    const { dog, silent, watch, run } = setup();
    // 1,000 releases in flight, then a check: it may wait 50 + 1000 x 0.1 = 150 ms of idle time.
    const replies: (() => void)[] = [];
    for (let i = 0; i < 1_000; i++) dog.aside('a', new Promise<void>((resolve) => replies.push(resolve)));
    const check = watch('a', 'check');
    for (let i = 0; i < 14; i++) {
      await run(10);
      // Their replies come, and keep the node from silence. Before: the check was late at 50 ms.
      for (const reply of replies.slice(i * 72, Math.min((i + 1) * 72, 1_000))) reply();
    }
    expect(silent).toEqual([]);
    dog.settle(check);
    // Settled, they no longer count: the next call has its 50 ms. The node answers other calls every
    // 10 ms (never silent), so only the late rule answers it: with the 1,000 still counted, 150 ms.
    const next = watch('a', 'next');
    for (let i = 0; i < 8; i++) {
      await run(10);
      dog.settle(watch('a', `ok${i}`));
    }
    expect(silent).toEqual(['next']);
    expect(dog.settle(next)).toBe(false);
  });

  it('aside calls that never settle stop counting once the node is judged silent', async () => {
    const { dog, silent, watch, run } = setup();
    for (let i = 0; i < 1_000; i++) dog.aside('a', new Promise<void>(() => {}));
    watch('a', 'first');
    await run(70);
    expect(silent).toEqual(['first']);
    // The node answers other calls every 10 ms (never silent): only the late rule can answer `hung`.
    const hung = watch('a', 'hung');
    for (let i = 0; i < 8; i++) {
      await run(10);
      dog.settle(watch('a', `ok${i}`));
    }
    // Before: 1,000 x 0.1 ms more allowance for ever, so `hung` waited about 160 ms.
    expect(silent).toContain('hung');
    expect(dog.settle(hung)).toBe(false);
  });

  it('a busy loop does not age a call: its wait counts idle time only', async () => {
    const { dog, silent, watch, run, busy } = setup();
    const ticket = watch('a', 'call');
    const other = watch('a', 'other');
    for (let i = 0; i < 10; i++) {
      await busy(30);
      // Replies to other calls keep the node from silence; the loop never waits for I/O.
      dog.settle(watch('a', `ok${i}`));
    }
    expect(silent).toEqual([]);
    await run(70);
    expect(silent.sort()).toEqual(['call', 'other']);
    expect(dog.settle(ticket)).toBe(false);
    expect(dog.settle(other)).toBe(false);
  });

  it('judges each node apart: a silent node fails, a node that answers does not', async () => {
    const { dog, silent, watch, run } = setup();
    watch('down', 'lost1');
    watch('down', 'lost2');
    for (let i = 0; i < 10; i++) {
      const ticket = watch('up', `ok${i}`);
      await run(10);
      dog.settle(ticket);
    }
    expect(silent.sort()).toEqual(['lost1', 'lost2']);
    expect(dog.pendingOn('down')).toBe(0);
  });

  it("a late call the node answered calls past (sent after it) is overtaken: its own fault, not the node's", async () => {
    const { dog, silent, why, watch, run } = setup();
    // The client sent `moved` again (a Cluster redirection, a TRYAGAIN): the node answers the calls sent after it.
    const moved = watch('a', 'moved');
    for (let i = 0; i < 8; i++) {
      await run(10);
      dog.settle(watch('a', `ok${i}`));
    }
    expect(silent).toEqual(['moved']);
    // Before: 'late', a failure of the node. Calls answered in order stay the node's ('a node that answers too slowly').
    expect(why).toEqual(['overtaken']);
    expect(dog.settle(moved)).toBe(false);
  });

  it('a settlement after the watchdog answered is reported as late (false)', async () => {
    const { dog, watch, run } = setup(20);
    const ticket = watch('a', 'call');
    await run(40);
    expect(dog.settle(ticket)).toBe(false);
  });
});
