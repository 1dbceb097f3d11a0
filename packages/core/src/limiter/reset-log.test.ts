import { describe, expect, it } from 'vitest';
import { RESET_KEYS, ResetLog } from './reset-log.js';

describe('ResetLog', () => {
  it('tells a charge made before its key was reset, by the resets before it, never by time', () => {
    const log = new ResetLog();
    const before = log.seq;
    expect(log.staleSince('a', before)).toBe(false);
    log.record('a');
    const after = log.seq;
    expect(log.staleSince('a', before)).toBe(true);
    expect(log.staleSince('a', after)).toBe(false);
    expect(log.staleSince('b', before)).toBe(false);
    expect(log.staleSince(['b', 'a'], before)).toBe(true);
    expect(log.staleSince(['b', 'c'], before)).toBe(false);
    log.record('b');
    expect(log.staleSince('a', after)).toBe(false);
    expect(log.staleSince(['a', 'b'], after)).toBe(true);
  });

  it('remembers the last RESET_KEYS keys; a charge older than a forgotten reset is taken as stale', () => {
    const log = new ResetLog();
    const first = log.seq;
    log.record('old');
    const afterOld = log.seq;
    for (let i = 0; i < RESET_KEYS; i++) log.record(`k${i}`);
    // 'old' is forgotten: a charge before it cannot be told fresh; one after it, of a key never reset, can.
    expect(log.staleSince('old', first)).toBe(true);
    expect(log.staleSince('never-reset', first)).toBe(true);
    expect(log.staleSince('never-reset', afterOld)).toBe(false);
    expect(log.staleSince('k0', afterOld)).toBe(true);
  });
});
