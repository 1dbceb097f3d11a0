/**
 * @module Micro-benchmark of the key extractors (`keys.ip()`, `keys.header()`, `keys.user()`): ns per call
 * for the request shapes every adapter sees. Self-contained (no benchmark library, no workspace
 * dependency) so it runs from a bare checkout:
 *
 *   npx tsx --conditions=@tollgate/source bench/src/micro/keys.ts [--quick] [--only <substring>]
 *
 * Each case runs its extractor over a fixed ring of prebuilt request views (one address repeated, as on a
 * keep-alive connection, or many distinct ones, as from many clients), after a warm-up, in several timed
 * passes interleaved across cases (so load from elsewhere on a shared machine spreads over all of them);
 * it prints the median and minimum of the CPU time per call, and the median wall time. Not part of the
 * test suite.
 */
import { createDiagnostics } from '../../../packages/core/src/diagnostics.js';
import type { HeaderBag, KeyFunction, RequestView } from '../../../packages/core/src/index.js';
import { keys } from '../../../packages/core/src/index.js';

interface Case {
  readonly name: string;
  readonly key: KeyFunction;
  readonly views: readonly RequestView[];
  /** The key every view must yield, checked once before timing (undefined: skip the check). */
  readonly expect?: string;
}

const diagnostics = createDiagnostics({ warn() {}, error() {} });

/**
 * `text` as a flat string, as Node hands over socket addresses and header values. (Template literals
 * make rope strings, whose characters cost more to read: a bench built from them measures the rope.)
 */
function flat(text: string): string {
  return Buffer.from(text, 'latin1').toString('latin1');
}

function view(remoteAddress: string, headers: HeaderBag = {}, request: unknown = {}): RequestView {
  // Filled one property at a time, as Node fills IncomingMessage.headers.
  const received: Record<string, string | string[] | undefined> = {};
  for (const [name, value] of Object.entries(headers)) received[name] = typeof value === 'string' ? flat(value) : value;
  return { remoteAddress: flat(remoteAddress), headers: received, method: 'GET', url: '/', request, diagnostics };
}

/** `n` distinct public IPv4 addresses (198.18.0.0/15, the benchmarking range). */
function distinctV4(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `198.${18 + ((i >>> 16) & 1)}.${(i >>> 8) & 255}.${i & 255}`);
}

/** `n` distinct IPv6 addresses in distinct /64s, random-looking interface ids. */
function distinctV6(n: number): string[] {
  return Array.from({ length: n }, (_, i) => {
    const h = Math.imul(i + 1, 0x9e3779b1) >>> 0;
    return `2001:db8:${(i >>> 8).toString(16)}:${(i & 255).toString(16)}:${(h >>> 16).toString(16)}:${(h & 0xffff).toString(16)}:1:${((i * 7) & 0xffff).toString(16)}`;
  });
}

const DISTINCT = 4096;
const loopback = keys.ip({ trustedProxies: 'loopback' });
const behindLb = keys.ip({ trustedProxies: ['loopback', 'private'] });
const direct = keys.ip();

const cases: Case[] = [
  { name: 'ip v4 socket, no trust list', key: direct, views: [view('203.0.113.7')], expect: 'ip:203.0.113.7' },
  { name: 'ip v4-mapped socket, no trust list', key: direct, views: [view('::ffff:203.0.113.7')], expect: 'ip:203.0.113.7' },
  { name: 'ip v4 socket, untrusted peer', key: loopback, views: [view('203.0.113.7')], expect: 'ip:203.0.113.7' },
  { name: 'ip v4 socket, 4096 distinct', key: direct, views: distinctV4(DISTINCT).map((a) => view(a)) },
  { name: 'ip v4-mapped, 4096 distinct', key: direct, views: distinctV4(DISTINCT).map((a) => view(`::ffff:${a}`)) },
  { name: 'ip v6 socket /64', key: direct, views: [view('2001:db8:1:2:3:4:5:6')], expect: 'ip:2001:db8:1:2::/64' },
  { name: 'ip v6 socket /64, 4096 distinct', key: direct, views: distinctV6(DISTINCT).map((a) => view(a)) },
  {
    name: 'ip loopback + XFF 1 hop',
    key: loopback,
    views: [view('127.0.0.1', { 'x-forwarded-for': '203.0.113.7' })],
    expect: 'ip:203.0.113.7',
  },
  {
    name: 'ip ::ffff:127.0.0.1 + XFF 1 hop',
    key: loopback,
    views: [view('::ffff:127.0.0.1', { 'x-forwarded-for': '203.0.113.7' })],
    expect: 'ip:203.0.113.7',
  },
  {
    name: 'ip loopback + XFF 2 hops',
    key: behindLb,
    views: [view('127.0.0.1', { 'x-forwarded-for': '203.0.113.7, 10.1.2.3' })],
    expect: 'ip:203.0.113.7',
  },
  {
    name: 'ip loopback + XFF 1 hop v6 client',
    key: loopback,
    views: [view('::1', { 'x-forwarded-for': '2001:db8:1:2:3:4:5:6' })],
    expect: 'ip:2001:db8:1:2::/64',
  },
  {
    name: 'ip loopback + XFF 1 hop, 4096 distinct',
    key: loopback,
    views: distinctV4(DISTINCT).map((a) => view('127.0.0.1', { 'x-forwarded-for': a })),
  },
  {
    name: 'ip loopback + Forwarded 1 hop',
    key: keys.ip({ trustedProxies: 'loopback', header: 'forwarded' }),
    views: [view('127.0.0.1', { forwarded: 'for=203.0.113.7;proto=https' })],
    expect: 'ip:203.0.113.7',
  },
  {
    name: 'header sha256',
    key: keys.header('x-api-key'),
    views: [view('127.0.0.1', { 'x-api-key': 'sk_live_4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c' })],
  },
  {
    name: 'header sha256, 4096 distinct',
    key: keys.header('x-api-key'),
    views: Array.from({ length: DISTINCT }, (_, i) => view('127.0.0.1', { 'x-api-key': `sk_live_${i.toString(16).padStart(32, '0')}` })),
  },
  {
    name: 'header hmac',
    key: keys.header('x-api-key', { secret: 'a-long-random-secret-of-32-bytes!' }),
    views: [view('127.0.0.1', { 'x-api-key': 'sk_live_4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c' })],
  },
  {
    name: 'user id string',
    key: keys.user((req: { user: { id: string } }) => req.user.id),
    views: [view('127.0.0.1', {}, { user: { id: 'u_8f2c1d' } })],
    expect: 'user:u_8f2c1d',
  },
  {
    name: 'user id number',
    key: keys.user((req: { user: { id: number } }) => req.user.id),
    views: [view('127.0.0.1', {}, { user: { id: 4242 } })],
    expect: 'user:4242',
  },
  {
    name: 'first(user undefined, ip)',
    key: keys.first(
      keys.user(() => undefined),
      direct,
    ),
    views: [view('203.0.113.7')],
    expect: 'ip:203.0.113.7',
  },
];

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const onlyAt = args.indexOf('--only');
const only = onlyAt === -1 ? undefined : args[onlyAt + 1];
const selected = only === undefined ? cases : cases.filter((c) => c.name.includes(only));

let sink = 0;

/**
 * Runs `iterations` calls over the ring of views; returns CPU ns per call (user + system time of the
 * process: on a shared machine, time spent waiting for a core is not ours) and wall-clock ns per call.
 */
function pass(c: Case, iterations: number): { cpu: number; wall: number } {
  const { key, views } = c;
  const n = views.length;
  const cpu = process.cpuUsage();
  const start = process.hrtime.bigint();
  for (let i = 0, j = 0; i < iterations; i++) {
    const view = views[j] as RequestView;
    const result = key(view.request, view);
    sink += typeof result === 'string' ? result.length : 1;
    if (++j === n) j = 0;
  }
  const wall = Number(process.hrtime.bigint() - start);
  const used = process.cpuUsage(cpu);
  return { cpu: ((used.user + used.system) * 1000) / iterations, wall: wall / iterations };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

for (const c of selected) {
  for (const v of c.views) {
    const got = c.key(v.request, v);
    if (typeof got !== 'string') throw new Error(`${c.name}: no key for ${v.remoteAddress}`);
    if (c.expect !== undefined && got !== c.expect) throw new Error(`${c.name}: got ${got}, want ${c.expect}`);
  }
}

const passes = quick ? 5 : 11;
const budgetNs = quick ? 20e6 : 60e6;
const iterations = new Map<Case, number>();
for (const c of selected) {
  pass(c, 20_000); // warm-up: let the JIT settle
  const estimate = pass(c, 20_000).wall;
  iterations.set(c, Math.max(10_000, Math.round(budgetNs / Math.max(estimate, 1))));
}
const samples = new Map<Case, { cpu: number[]; wall: number[] }>(selected.map((c) => [c, { cpu: [], wall: [] }]));
for (let p = 0; p < passes; p++) {
  for (const c of selected) {
    const { cpu, wall } = pass(c, iterations.get(c) ?? 10_000);
    samples.get(c)?.cpu.push(cpu);
    samples.get(c)?.wall.push(wall);
  }
}

const width = Math.max(...selected.map((c) => c.name.length));
const fmt = (x: number) => x.toFixed(0).padStart(7);
console.log(`${'case'.padEnd(width)}  cpu ns/call (median, min of ${passes})  wall ns/call (median)`);
for (const c of selected) {
  const { cpu, wall } = samples.get(c) ?? { cpu: [], wall: [] };
  console.log(`${c.name.padEnd(width)}  ${fmt(median(cpu))} ${fmt(Math.min(...cpu))}                ${fmt(median(wall))}`);
}
if (sink === 0.5) console.log(sink);
