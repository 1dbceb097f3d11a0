import { EventEmitter } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { waitUnlessClosed } from './shaping-delay.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('waitUnlessClosed', () => {
  it('resolves true after the delay and leaves no listener behind', async () => {
    vi.useFakeTimers();
    const res = new EventEmitter();
    const done = waitUnlessClosed(250, res);
    await vi.advanceTimersByTimeAsync(249);
    expect(res.listenerCount('close')).toBe(1);
    await vi.advanceTimersByTimeAsync(1);
    await expect(done).resolves.toBe(true);
    expect(res.listenerCount('close')).toBe(0);
  });

  it('resolves false as soon as the client goes away, and clears the timer', async () => {
    vi.useFakeTimers();
    const res = new EventEmitter();
    const done = waitUnlessClosed(10_000, res);
    res.emit('close');
    await expect(done).resolves.toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('does not wait for 0 ms, nor for a response already closed', async () => {
    await expect(waitUnlessClosed(0, new EventEmitter())).resolves.toBe(true);
    await expect(waitUnlessClosed(5, Object.assign(new EventEmitter(), { destroyed: true }))).resolves.toBe(false);
  });
});
