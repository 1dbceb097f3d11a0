/**
 * @module Section C's CPU meter: a process's CPU seconds from /proc/<pid>/stat, the command name (which
 * may hold spaces and parentheses) skipped.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cpuSecondsOfStat } from './http-section.js';

describe('cpuSecondsOfStat', () => {
  it('reads utime + stime (fields 14 and 15) after a command name with spaces and parentheses', () => {
    const stat = '4242 (node (http) server) S 1 4242 4242 0 -1 4194560 900 0 0 0 1234 56 0 0 20 0 11 0 77 0 0';
    expect(cpuSecondsOfStat(stat, 100)).toBeCloseTo(12.9, 10);
    expect(cpuSecondsOfStat(stat, 1000)).toBeCloseTo(1.29, 10);
  });

  it('is NaN for text without those fields', () => {
    expect(cpuSecondsOfStat('4242 (node) S 1', 100)).toBeNaN();
    expect(cpuSecondsOfStat('', 100)).toBeNaN();
  });

  it.runIf(process.platform === 'linux')("reads this process's own CPU time, which grows with work", () => {
    const read = () => cpuSecondsOfStat(readFileSync('/proc/self/stat', 'utf8'), 100);
    const before = read();
    const until = process.cpuUsage().user + 50_000;
    let x = 0;
    while (process.cpuUsage().user < until) x += Math.sqrt(x + 1);
    expect(x).toBeGreaterThan(0);
    expect(read()).toBeGreaterThan(before);
  });
});
