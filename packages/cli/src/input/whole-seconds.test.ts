/**
 * @module Whole-second times: told apart from millisecond ones, and spread over their second in order.
 */
import { describe, expect, it } from 'vitest';
import type { LogRequest } from './request-parser.js';
import { spreadWholeSeconds, WholeSeconds } from './whole-seconds.js';

async function* batches(...lists: LogRequest[][]): AsyncGenerator<LogRequest[]> {
  for (const list of lists) yield list;
}

async function times(source: AsyncIterable<LogRequest[]>): Promise<number[]> {
  const out: number[] = [];
  for await (const b of source) out.push(...b.map((r) => r.at));
  return out;
}

const at = (...ms: number[]): LogRequest[] => ms.map((t, i) => ({ at: t, key: `k${i}`, cost: 1 }));

describe('spreadWholeSeconds', () => {
  it("spreads each second's requests evenly over it, in order, across batches", async () => {
    expect(await times(spreadWholeSeconds(batches(at(0, 0), at(0, 0, 1000), at(3000))))).toEqual([0, 250, 500, 750, 1000, 3000]);
  });

  it('keeps ties in a millisecond log before what follows them, and passes millisecond times as they are', async () => {
    // Before (spread over the whole second in the merged stream): 0, 500, then 100, 200: time went back.
    expect(await times(spreadWholeSeconds(batches(at(0, 0, 100, 200, 1000, 1001))))).toEqual([0, 50, 100, 200, 1000, 1001]);
  });

  it('replays a late request at its own time, and goes on with a second it split where that second was', async () => {
    // Before: 5000, 5500, 5500, 5500, 5500: the late request of second 4 was moved to the newest time.
    const out = await times(spreadWholeSeconds(batches(at(5000, 5000, 4000, 5000, 5000))));
    expect(out).toEqual([5000, 5500, 4000, 5500, 5500]);
    const notLate = out.filter((_, i) => i !== 2);
    expect(notLate).toEqual([...notLate].sort((a, b) => a - b));
    // Two late requests of one earlier second are spread over it, as that second's requests are.
    expect(await times(spreadWholeSeconds(batches(at(7000, 7000, 1000, 1000, 8000))))).toEqual([7000, 7500, 1000, 1500, 8000]);
  });
});

describe('spreadWholeSeconds on a log whose times are all one', () => {
  it('spreads them 100,000 at a time (the group held), with times that never go back and stay in the second', async () => {
    const one = Array.from({ length: 250_000 }, (_, i) => ({ at: 7000, key: `k${i}`, cost: 1 }));
    let last = 0;
    let count = 0;
    for await (const b of spreadWholeSeconds(batches(one))) {
      for (const r of b) {
        expect(r.at >= last).toBe(true);
        last = r.at;
      }
      count += b.length;
    }
    expect(count).toBe(250_000);
    expect(last).toBeLessThan(8000);
  });
});

describe('WholeSeconds', () => {
  it('sees whole seconds only with every time whole and 5 requests at least', async () => {
    const whole = new WholeSeconds();
    await times(whole.watch(batches(at(0, 1000, 2000, 3000, 4000))));
    const few = new WholeSeconds();
    await times(few.watch(batches(at(0, 1000))));
    const ms = new WholeSeconds();
    await times(ms.watch(batches(at(0, 1000, 2000, 3000, 4001))));
    expect([whole.seen, few.seen, ms.seen]).toEqual([true, false, false]);
  });
});
