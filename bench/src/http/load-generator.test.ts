/**
 * @module Tests of the load generators' report parsers, on reports captured from wrk 4.1 and autocannon 8.
 */
import { describe, expect, it } from 'vitest';
import { parseAutocannon, parseWrk } from './load-generator.js';

const WRK = `Running 3s test @ http://127.0.0.1:40000/
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     3.01ms  410.22us   9.87ms   90.12%
    Req/Sec    16.71k   801.43    17.60k    83.33%
  49870 requests in 3.00s, 9.18MB read
  Non-2xx or 3xx responses: 49870
  Socket errors: connect 0, read 2, write 0, timeout 1
Requests/sec:  16618.21
Transfer/sec:      3.06MB
`;

describe('parseWrk', () => {
  it('reads requests, duration, non-2xx responses and socket errors', () => {
    const r = parseWrk(WRK);
    expect(r.requests).toBe(49870);
    expect(r.seconds).toBe(3);
    expect(r.rps).toBeCloseTo(16623.3, 1);
    expect(r.non2xx).toBe(49870);
    expect(r.errors).toBe(3);
  });

  it('reads a duration in ms and a report without errors', () => {
    const r = parseWrk('  900 requests in 500.00ms, 1MB read\nRequests/sec: 1800.00\n');
    expect(r.seconds).toBe(0.5);
    expect(r.non2xx).toBe(0);
    expect(r.errors).toBe(0);
  });

  it('throws on output without results', () => {
    expect(() => parseWrk('unable to connect to 127.0.0.1:9 Connection refused')).toThrow(/no results/);
  });
});

describe('parseAutocannon', () => {
  it('reads the JSON line', () => {
    const json = JSON.stringify({ requests: { total: 3000, average: 1500 }, duration: 2.01, non2xx: 10, errors: 1, timeouts: 2 });
    const r = parseAutocannon(`Running 2s test\n${json}\n`);
    expect(r).toEqual({ requests: 3000, seconds: 2.01, rps: 3000 / 2.01, non2xx: 10, errors: 3 });
  });

  it('throws without JSON', () => {
    expect(() => parseAutocannon('oops')).toThrow(/no JSON/);
  });
});
