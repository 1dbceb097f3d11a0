import { describe, expect, it } from 'vitest';
import { Returning } from './returning.js';

/** A promise the test settles. */
function deferred() {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe('Returning (Store.returning)', () => {
  it('waits for every give-back of a key in flight, failed ones too, then forgets the key', async () => {
    const r = new Returning();
    expect(r.of('k')).toBeUndefined();
    const a = deferred();
    const b = deferred();
    r.track('k', a.promise);
    r.track('k', b.promise).catch(() => undefined);
    let landed = false;
    const back = r.of('k')?.then(() => {
      landed = true;
    });
    expect(back).toBeDefined();
    a.resolve();
    await Promise.resolve();
    await Promise.resolve();
    expect(landed).toBe(false);
    b.reject(new Error('connection lost'));
    await back;
    expect(landed).toBe(true);
    await Promise.resolve();
    expect(r.of('k')).toBeUndefined();
  });

  it('keeps keys apart, a key of several policies under one name', async () => {
    const r = new Returning();
    const a = deferred();
    r.track(['x', 'y'], a.promise);
    expect(r.of('x')).toBeUndefined();
    expect(r.of(['x', 'y'])).toBeDefined();
    expect(r.of(['x', 'z'])).toBeUndefined();
    a.resolve();
    await r.of(['x', 'y']);
    await Promise.resolve();
    expect(r.of(['x', 'y'])).toBeUndefined();
  });
});
