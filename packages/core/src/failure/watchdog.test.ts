import { afterEach, describe, expect, it, vi } from 'vitest';
import { Watchdog } from './watchdog.js';

/** Fake timers, and a clock the test moves by hand: moving it without running timers is a blocked loop. */
function setup(timeoutMs = 50) {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'setTimeout', 'clearTimeout'] });
  let t = 0;
  const dog = new Watchdog(timeoutMs, () => t);
  const silent: string[] = [];
  const watch = (node: string, name: string) => dog.watch(node, () => silent.push(name));
  /** The loop runs freely for `ms`: timers fire every ms of it. */
  const run = async (ms: number) => {
    for (let i = 0; i < ms; i++) {
      t += 1;
      await vi.advanceTimersByTimeAsync(1);
    }
  };
  /** The loop is blocked for `ms` (time passes, nothing runs), then runs for one period (10 ms). */
  const block = async (ms: number) => {
    t += ms;
    await run(10);
  };
  return { dog, silent, watch, run, block };
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

  it('any settlement on the node resets its silence: a draining backlog never fails', async () => {
    const { dog, silent, watch, run } = setup();
    const tickets = Array.from({ length: 20 }, (_, i) => watch('a', `call${i}`));
    for (const ticket of tickets) {
      await run(40);
      expect(dog.settle(ticket)).toBe(true);
    }
    expect(silent).toEqual([]);
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

  it('a settlement after the watchdog answered is reported as late (false)', async () => {
    const { dog, watch, run } = setup(20);
    const ticket = watch('a', 'call');
    await run(40);
    expect(dog.settle(ticket)).toBe(false);
  });
});
