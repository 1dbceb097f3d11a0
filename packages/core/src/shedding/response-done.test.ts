import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { onResponseDone } from './response-done.js';

class FakeResponse extends EventEmitter {
  writableFinished = false;
  destroyed = false;
}

describe('onResponseDone', () => {
  it('calls back once on finish, not again on the close that follows', () => {
    const res = new FakeResponse();
    const calls: boolean[] = [];
    onResponseDone(res, (f) => calls.push(f));
    res.writableFinished = true;
    res.emit('finish');
    res.emit('close');
    expect(calls).toEqual([true]);
    expect(res.listenerCount('close')).toBe(0);
  });

  it('reports a close before finish (client went away) as unfinished', () => {
    const res = new FakeResponse();
    const calls: boolean[] = [];
    onResponseDone(res, (f) => calls.push(f));
    res.emit('close');
    res.emit('finish');
    expect(calls).toEqual([false]);
  });

  it('calls back at once for a response already over', () => {
    const res = new FakeResponse();
    res.destroyed = true;
    const calls: boolean[] = [];
    onResponseDone(res, (f) => calls.push(f));
    expect(calls).toEqual([false]);
  });
});
