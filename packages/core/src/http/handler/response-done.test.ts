import { EventEmitter } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { abortOnClose, onResponseDone } from './response-done.js';

class FakeResponse extends EventEmitter {
  writableFinished = false;
  writableEnded = false;
  destroyed = false;
  ended = 0;
  end(): this {
    this.ended += 1;
    this.writableEnded = true;
    return this;
  }
}

/** A fresh response watched by onResponseDone, and the calls of its `done`. */
function watched(maxHoldMs?: number): { res: FakeResponse; calls: boolean[] } {
  const res = new FakeResponse();
  const calls: boolean[] = [];
  onResponseDone(res, (f) => calls.push(f), maxHoldMs);
  return { res, calls };
}

describe('onResponseDone', () => {
  it('calls back once on finish, not again on the close that follows', () => {
    const { res, calls } = watched();
    res.writableFinished = true;
    res.emit('finish');
    res.emit('close');
    expect(calls).toEqual([true]);
    expect(res.listenerCount('close')).toBe(0);
  });

  it('after the client went away, waits for the handler to end the response', () => {
    const { res, calls } = watched();
    res.destroyed = true;
    res.emit('close');
    expect(calls).toEqual([]);
    res.end();
    res.end();
    expect(calls).toEqual([false]);
    expect(res.ended).toBe(2);
  });

  it('calls back at once when the handler had already ended the response', () => {
    const res = new FakeResponse();
    const calls: boolean[] = [];
    res.end();
    onResponseDone(res, (f) => calls.push(f));
    res.emit('close');
    expect(calls).toEqual([false]);
  });

  it('calls back at once for a response already finished', () => {
    const res = new FakeResponse();
    res.writableFinished = true;
    const calls: boolean[] = [];
    onResponseDone(res, (f) => calls.push(f));
    expect(calls).toEqual([true]);
  });

  it('after the connection closed, headers sent or not, waits for the handler; a piped body that lets go is done', () => {
    const { res, calls } = watched();
    // Headers sent, then the connection closed: the handler may still be writing (an export): not done.
    res.destroyed = true;
    res.emit('close');
    expect(calls).toEqual([]);
    // A stream piped into the response unpipes when the connection closes: nothing will end it.
    res.emit('unpipe');
    expect(calls).toEqual([false]);
    res.end();
    expect(calls).toEqual([false]);
    expect(res.listenerCount('unpipe')).toBe(0);
  });

  it('with maxHoldMs, gives up waiting that long after the close (a handler that never ends the response)', () => {
    vi.useFakeTimers();
    try {
      const { res, calls } = watched(1_000);
      vi.advanceTimersByTime(5_000);
      // Nothing closed yet: the bound counts from the close.
      expect(calls).toEqual([]);
      res.destroyed = true;
      res.emit('close');
      vi.advanceTimersByTime(999);
      expect(calls).toEqual([]);
      vi.advanceTimersByTime(1);
      expect(calls).toEqual([false]);
      res.end();
      expect(calls).toEqual([false]);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('abortOnClose', () => {
  it("aborts when the connection closes; a response already over lets go of the connection's watch (keep-alive)", () => {
    const socket = new EventEmitter();
    const responses = Array.from({ length: 3 }, () => Object.assign(new FakeResponse(), { req: { socket } }));
    const signals = responses.map((res) => abortOnClose(res));
    // The first two are over (finished, as on a keep-alive connection), the third waits in a queue.
    for (const res of responses.slice(0, 2)) res.emit('finish');
    expect(socket.listenerCount('close')).toBe(1);
    socket.emit('close');
    // Before: every request's controller stayed on the socket until it closed, then was aborted.
    expect(signals.map((s) => s.aborted)).toEqual([false, false, true]);
  });
});
