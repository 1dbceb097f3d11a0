import { describe, expect, it } from 'vitest';
import { NodeHealth } from './node-health.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('NodeHealth: the breaker of one store node', () => {
  it('an open breaker no call probes turns half-open once its wait is over: its gauge no longer says open while nothing has tried the node', async () => {
    const states: string[] = [];
    const h = new NodeHealth('n', { failureThreshold: 1, cooldownMs: 1_000 }, (x) => states.push(x.state));
    h.failure(1, 1, Date.now(), false);
    expect(h.state).toBe('open');
    expect(h.allow(Date.now())).toBe(false);
    // The first probe may go 10 ms after the failure; no call comes (a limiter with no traffic).
    await sleep(40);
    // Before: still 'open', until the limiter's next request (an hour of paging for a quiet route).
    expect(states).toEqual(['open', 'half-open']);
    // The next call is the probe; its timely reply closes the breaker.
    expect(h.allow(Date.now())).toBe(true);
    expect(h.allow(Date.now())).toBe(false);
    h.success();
    expect(h.state).toBe('closed');
    h.close();
  });

  it('a probe that fails opens it again, and it turns half-open again after the longer wait; a clock short of the wait (virtual time) leaves it open', async () => {
    let t = 0;
    const states: string[] = [];
    const h = new NodeHealth(
      'n',
      { failureThreshold: 1, cooldownMs: 1_000 },
      (x) => states.push(x.state),
      () => t,
    );
    h.failure(1, 1, t, false);
    await sleep(30);
    // The limiter's clock did not move: the timer leaves the state to the next call.
    expect(states).toEqual(['open']);
    t = 10;
    expect(h.allow(t)).toBe(true);
    h.failure(2, 2, t, true);
    expect(states).toEqual(['open', 'half-open', 'open']);
    t = 40;
    await sleep(40);
    expect(states).toEqual(['open', 'half-open', 'open', 'half-open']);
    h.close();
  });

  it('stays open past its wait while the store connection is down (a probe would be refused at once); turns half-open when the client is ready again', async () => {
    const states: string[] = [];
    const h = new NodeHealth('n', { failureThreshold: 1, cooldownMs: 1_000 }, (x) => states.push(x.state));
    h.connection(true);
    h.failure(1, 1, Date.now(), false);
    await sleep(40);
    // Before: 'half-open' 10 ms after each refused probe, so its gauge read half-open most of an outage.
    expect(states).toEqual(['open']);
    // A call still takes the probe once the wait is over, and its refusal opens it again.
    expect(h.allow(Date.now())).toBe(true);
    h.failure(2, 2, Date.now(), false);
    await sleep(40);
    expect(states).toEqual(['open', 'half-open', 'open']);
    h.connection(false);
    await sleep(10);
    expect(states).toEqual(['open', 'half-open', 'open', 'half-open']);
    h.close();
  });

  it('half-open already when the connection is lost (a timeout opened it, the socket closed later): open again', async () => {
    const states: string[] = [];
    const h = new NodeHealth('n', { failureThreshold: 1, cooldownMs: 1_000 }, (x) => states.push(x.state));
    h.failure(1, 1, Date.now(), true);
    await sleep(40);
    expect(states).toEqual(['open', 'half-open']);
    h.connection(true);
    // Before: half-open for the whole outage of an idle limiter, so its breaker alert never fired.
    expect(states).toEqual(['open', 'half-open', 'open']);
    h.connection(false);
    await sleep(10);
    expect(states).toEqual(['open', 'half-open', 'open', 'half-open']);
    h.close();
  });

  it('a timer that fires before the clock reads the end of the wait is armed again for the rest, so an idle breaker still turns half-open', async () => {
    const base = Date.now();
    let lag = 0;
    const states: string[] = [];
    const h = new NodeHealth(
      'n',
      { failureThreshold: 1, cooldownMs: 1_000 },
      (x) => states.push(x.state),
      () => Date.now() - base - lag,
    );
    h.failure(1, 1, 0, false);
    // The clock runs, but reads 4 ms short of the wait's end when the 10 ms timer fires.
    lag = 4;
    await sleep(60);
    // Before: 'open' until the next call (the timer was not armed again).
    expect(states).toEqual(['open', 'half-open']);
    h.close();
  });
});
