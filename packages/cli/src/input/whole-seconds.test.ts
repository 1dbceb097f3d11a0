/**
 * @module Whole-second times: told apart from millisecond ones, and spread over their second in order.
 */
import { describe, expect, it } from 'vitest';
import type { LogRequest } from './request-parser.js';
import { judgeWholeSeconds, type Spreading, spreadWholeSeconds, WholeSeconds } from './whole-seconds.js';

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

  it('passes a millisecond log as it is: the second held when its first millisecond time comes, and its later .000 bursts', async () => {
    // Before: 0, 50 (the tie spread up to the next time), and the burst on 2000 spread to 2000, 2333, 2666.
    const spreading: Spreading = { moved: false };
    const out = await times(spreadWholeSeconds(batches(at(0, 0, 100, 200), at(2000, 2000, 2000, 2999, 4000)), spreading));
    expect(out).toEqual([0, 0, 100, 200, 2000, 2000, 2000, 2999, 4000]);
    expect(spreading.moved).toBe(false);
  });

  it('spreads a file while every time it has shown is whole, and stops at its first time with milliseconds', async () => {
    // Seconds 0 and 1 were whole when they were spread; second 2 was held when 2300 came, and passes as it is.
    const spreading: Spreading = { moved: false };
    const out = await times(spreadWholeSeconds(batches(at(0, 0, 1000, 1000), at(2000, 2000, 2300, 3000, 3000)), spreading));
    expect(out).toEqual([0, 500, 1000, 1500, 2000, 2000, 2300, 3000, 3000]);
    expect(spreading.moved).toBe(true);
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

describe('judgeWholeSeconds', () => {
  async function watched(...files: number[][]): Promise<WholeSeconds[]> {
    const out = files.map(() => new WholeSeconds());
    for (const [i, f] of files.entries()) await times((out[i] as WholeSeconds).watch(batches(at(...f))));
    return out;
  }

  it('judges each file on its own: a whole-second file beside a millisecond one is whole, the run is not', async () => {
    // Before: one judgement over both files, whole seconds nowhere.
    const judged = judgeWholeSeconds(await watched([0, 1000, 2000, 3000, 4000], [0, 1000, 1500, 2000, 2500]));
    expect(judged).toEqual({ wholeSeconds: false, files: [true, false] });
  });

  it('takes enough requests in all when every file is whole, and never calls an empty or too short file whole alone', async () => {
    expect(judgeWholeSeconds(await watched([0, 1000, 2000], [0, 1000, 2000], []))).toEqual({
      wholeSeconds: true,
      files: [true, true, false],
    });
    expect(judgeWholeSeconds(await watched([0, 1000, 2000], [0, 1500]))).toEqual({ wholeSeconds: false, files: [false, false] });
    expect(judgeWholeSeconds(await watched([0, 1000]))).toEqual({ wholeSeconds: false, files: [false] });
  });
});
