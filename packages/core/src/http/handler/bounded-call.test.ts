import { describe, expect, it } from 'vitest';
import { boundedCall, boundedCallWith } from './bounded-call.js';

describe('boundedCall', () => {
  it('returns a synchronous result without a promise', () => {
    expect(boundedCall(() => 'k', 10)).toEqual({ ok: true, value: 'k' });
  });

  it('turns a throw, a rejection and a hang into a fallback, never an unhandled rejection', async () => {
    expect(
      boundedCall(() => {
        throw new Error('x');
      }, 10),
    ).toMatchObject({ ok: false, timedOut: false });
    await expect(boundedCall(() => Promise.reject(new Error('y')), 10)).resolves.toMatchObject({ ok: false, timedOut: false });
    await expect(boundedCall(() => new Promise(() => undefined), 10)).resolves.toMatchObject({ ok: false, timedOut: true });
    // Settles late, rejecting: observed, so nothing surfaces as unhandled.
    const late = boundedCall(() => new Promise((_, reject) => setTimeout(() => reject(new Error('late')), 20)), 5);
    await expect(late).resolves.toMatchObject({ timedOut: true });
    await new Promise((r) => setTimeout(r, 30));
  });

  it("a result whose `then` getter throws is the callback's failure (a key that fails is never a bypass)", () => {
    const hostile = {
      // biome-ignore lint/suspicious/noThenProperty: the hostile thenable is the point of the test.
      get then(): never {
        throw new Error('then getter');
      },
    };
    expect(boundedCall(() => hostile, 10)).toMatchObject({ ok: false, timedOut: false });
    expect(boundedCallWith((_a: number, _b: number) => hostile, 1, 2, 10)).toMatchObject({ ok: false, timedOut: false });
  });
});
