import { describe, expect, it } from 'vitest';
import { RateLimitConfigError } from '../../errors.js';
import { requestView } from '../../testing/request-view-fixture.js';
import type { KeyFunction } from '../request-view.js';
import { firstKey } from './first-key.js';

const view = requestView({ remoteAddress: '203.0.113.7' }).view;
const constant =
  (key: string | undefined | null): KeyFunction =>
  () =>
    key as string | undefined;
const later =
  (key: string | undefined): KeyFunction =>
  async () =>
    key;

describe('keys.first()', () => {
  it('returns the first key, synchronously when the extractors are sync', () => {
    expect(firstKey(constant(undefined), constant('user:1'), constant('ip:1.2.3.4'))({}, view)).toBe('user:1');
    expect(firstKey(constant('a'))({}, view)).toBe('a');
  });

  it('skips undefined, null and empty results', () => {
    expect(firstKey(constant(undefined), constant(null), constant(''), constant('ip:1.2.3.4'))({}, view)).toBe('ip:1.2.3.4');
  });

  it('skips a result that is not a string (a number id, an object), sync or async: it is no key', async () => {
    const odd =
      (value: unknown, async = false): KeyFunction =>
      () =>
        (async ? Promise.resolve(value) : value) as string | undefined;
    expect(firstKey(odd(42), odd({}), odd(Number.NaN), odd(true), constant('ip:1.2.3.4'))({}, view)).toBe('ip:1.2.3.4');
    expect(await firstKey(odd(42, true), odd(7), constant('ip:1.2.3.4'))({}, view)).toBe('ip:1.2.3.4');
    expect(firstKey(odd(42))({}, view)).toBeUndefined();
  });

  it('warns once, naming the argument, when an extractor returns something that is neither a key nor "no key"', async () => {
    const number: KeyFunction = () => 42 as unknown as string;
    const made = requestView({ remoteAddress: '203.0.113.7' });
    const no = (() => false) as unknown as KeyFunction;
    expect(firstKey(constant(undefined), constant(null), constant(''), no, constant('ip:1'))({}, made.view)).toBe('ip:1');
    expect(made.logger.warnings).toEqual([]);
    expect(firstKey(constant(undefined), number, constant('ip:1'))({}, made.view)).toBe('ip:1');
    expect(made.logger.warnings).toHaveLength(1);
    expect(made.logger.warnings[0]).toContain('WRN_RL_INVALID_KEY_ID: keys.first() argument 2 returned number, not a string');
    const lateView = requestView({ remoteAddress: '203.0.113.7' });
    const asyncObject: KeyFunction = async () => ({ id: 1 }) as unknown as string;
    expect(await firstKey(asyncObject, constant('ip:1'))({}, lateView.view)).toBe('ip:1');
    expect(lateView.logger.warnings[0]).toContain('keys.first() argument 1 returned object');
  });

  it('returns undefined when no extractor yields a key', () => {
    expect(firstKey(constant(undefined), constant(''))({}, view)).toBeUndefined();
  });

  it('does not call extractors after the first key', () => {
    let called = false;
    const spy: KeyFunction = () => {
      called = true;
      return 'x';
    };
    firstKey(constant('a'), spy)({}, view);
    expect(called).toBe(false);
  });

  it('awaits async extractors in order', async () => {
    const order: string[] = [];
    const track =
      (name: string, key: string | undefined): KeyFunction =>
      async () => {
        order.push(name);
        return key;
      };
    await expect(firstKey(track('a', undefined), constant(undefined), track('b', 'k'), track('c', 'z'))({}, view)).resolves.toBe('k');
    expect(order).toEqual(['a', 'b']);
    await expect(firstKey(later(undefined), later(undefined))({}, view)).resolves.toBeUndefined();
    await expect(firstKey(constant(undefined), later('async'))({}, view)).resolves.toBe('async');
    await expect(firstKey(later('first'), constant('second'))({}, view)).resolves.toBe('first');
  });

  it('passes the request and view through', () => {
    const request = { id: 9 };
    expect(firstKey<{ id: number }>((req, v) => `${req.id}:${v.remoteAddress}`)(request, { ...view, request })).toBe('9:203.0.113.7');
  });

  it('lets extractor errors propagate', async () => {
    const boom: KeyFunction = () => {
      throw new Error('boom');
    };
    expect(() => firstKey(constant(undefined), boom)({}, view)).toThrow('boom');
    await expect(firstKey(later(undefined), async () => Promise.reject(new Error('async boom')))({}, view)).rejects.toThrow('async boom');
  });

  it('rejects an empty chain and non-functions', () => {
    expect(() => firstKey()).toThrow(RateLimitConfigError);
    try {
      firstKey(constant('a'), 'ip' as never);
    } catch (error) {
      expect((error as RateLimitConfigError).code).toBe('ERR_RL_INVALID_KEY_FUNCTION');
      expect((error as RateLimitConfigError).option).toBe('keys.first() argument 2');
    }
  });
});
