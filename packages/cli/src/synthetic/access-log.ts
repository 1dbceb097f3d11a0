/**
 * @module A synthetic but realistic nginx `combined` access log (with the stock `main` format's
 * `"$http_x_forwarded_for"`), seeded so the same options give the same lines. The traffic a public site
 * sees: visitors loading pages (a document, then a burst of assets, then a pause), IPv6 visitors whose
 * address changes within their /64, crawlers at a steady pace, an office behind one NAT address, API
 * clients, and scrapers hammering for a few minutes. Used by examples/replay and the replay bench.
 */
import { createRandom, type Random } from './seeded-random.js';

export interface AccessLogOptions {
  /** Defaults to 1. */
  readonly seed?: number;
  /** Start time, epoch ms. Defaults to 2026-11-23T09:00:00Z. */
  readonly startMs?: number;
  /** Length of the log in seconds. Defaults to 1800. */
  readonly durationS?: number;
  /** Visitor sessions starting over the log. Defaults to 2500. */
  readonly visitors?: number;
  /**
   * The order lines are written in. Defaults to `'time'` (sorted by the logged time).
   * - `'written-at-end'`: as Apache and most servers log, each line is written when its request ends,
   *   but its time is when the request arrived (`%t`): lines come in the order requests end. Requests
   *   take 5-500 ms mostly, some seconds (slow clients, uploads), a few minutes (downloads, long polls),
   *   so a few lines land minutes after later ones.
   * - `'shuffled-within-hour'`: the lines of each clock hour in a random order (as a log merged from
   *   several buffered writers, or handed around after a `sort -R`, can be).
   */
  readonly order?: AccessLogOrder;
}

export type AccessLogOrder = 'time' | 'written-at-end' | 'shuffled-within-hour';

/** How long a request takes, ms: mostly short, a tail of seconds, a few minutes-long (written at end). */
function requestDuration(r: Random): number {
  const roll = r.next();
  if (roll < 0.97) return 5 + r.exponential(120);
  if (roll < 0.998) return 1000 + r.exponential(4000);
  return 60_000 + r.next() * 540_000;
}

/** Puts `events` (sorted by time) in the order `order` writes them. Uses its own random stream. */
function writeOrder(events: Event[], order: AccessLogOrder, seed: number, startMs: number): Event[] {
  if (order === 'time') return events;
  const r = createRandom(seed ^ 0x5eed_0ade);
  if (order === 'written-at-end') {
    const ends = events.map((e, i) => ({ e, end: e.at + requestDuration(r), i }));
    ends.sort((a, b) => a.end - b.end || a.i - b.i);
    return ends.map((x) => x.e);
  }
  const out = events.slice();
  let from = 0;
  while (from < out.length) {
    const hour = Math.floor((startMs + (out[from] as Event).at) / 3_600_000);
    let to = from;
    while (to < out.length && Math.floor((startMs + (out[to] as Event).at) / 3_600_000) === hour) to++;
    for (let i = to - 1; i > from; i--) {
      const j = from + Math.floor(r.next() * (i - from + 1));
      const t = out[i] as Event;
      out[i] = out[j] as Event;
      out[j] = t;
    }
    from = to;
  }
  return out;
}

interface Event {
  readonly at: number;
  readonly client: number;
  readonly line: number;
}

const PAGES = [
  '/',
  '/pricing',
  '/docs',
  '/docs/getting-started',
  '/blog',
  '/blog/rate-limits-explained',
  '/login',
  '/search?q=limits',
  '/products/42',
  '/cart',
];
const ASSETS = [
  '/static/app.js',
  '/static/vendor.js',
  '/static/app.css',
  '/static/logo.svg',
  '/static/font.woff2',
  '/img/hero.webp',
  '/img/avatar.png',
  '/favicon.ico',
  '/api/session',
  '/api/cart',
  '/static/chunk-1.js',
  '/static/chunk-2.js',
];
const BROWSERS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15',
  'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148',
];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

function two(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

/** `23/Nov/2026:09:00:00 +0000` */
export function formatNginxTime(ms: number): string {
  const d = new Date(ms);
  return `${two(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} +0000`;
}

interface Client {
  address: (r: Random) => string;
  agent: string;
  pages: readonly string[];
  assets: readonly string[];
}

function ipv4(r: Random): string {
  return `${r.pick([31, 62, 81, 85, 91, 109, 151, 176, 185, 203])}.${r.int(0, 255)}.${r.int(0, 255)}.${r.int(1, 254)}`;
}

function hex(r: Random): string {
  return r.int(0, 0xffff).toString(16);
}

/**
 * The log's clients and their requests, in the order drawn from `r` (the formatting draws after them):
 * visitors, crawlers, an office behind one NAT address, API clients and scrapers, over `duration` ms.
 */
function population(r: Random, duration: number, visitorCount: number | undefined): { clients: Client[]; events: Event[] } {
  const clients: Client[] = [];
  const events: Event[] = [];
  const add = (c: Client): number => clients.push(c) - 1;
  const emit = (at: number, client: number, line: number): void => {
    if (at >= 0 && at < duration) events.push({ at, client, line });
  };
  const visitors = visitorCount ?? Math.round((2500 * duration) / 1_800_000);
  // Visitors: sessions of page loads (a document, then assets within ~1.5 s), think time between pages.
  for (let v = 0; v < visitors; v++) {
    const six = r.next() < 0.2;
    const fixed = six ? `2a02:${hex(r)}:${hex(r)}:${hex(r)}` : ipv4(r);
    const c = add({
      // IPv6 privacy addresses: a new interface id now and then, same /64.
      address: six ? (rr) => `${fixed}:${hex(rr)}:${hex(rr)}:${hex(rr)}:${hex(rr)}` : () => fixed,
      agent: r.pick(BROWSERS),
      pages: PAGES,
      assets: ASSETS,
    });
    let t = r.next() * duration;
    const pages = r.int(2, 14);
    for (let p = 0; p < pages; p++) {
      emit(t, c, 0);
      const assets = r.int(4, 22);
      for (let a = 0; a < assets; a++) emit(t + 50 + r.next() * 1500, c, 1);
      t += 4000 + r.exponential(25_000);
    }
  }
  // Crawlers: steady, polite-ish.
  for (let k = 0; k < 5; k++) {
    const address = `66.249.${r.int(64, 79)}.${r.int(1, 254)}`;
    const c = add({
      address: () => address,
      agent: 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)',
      pages: PAGES,
      assets: PAGES,
    });
    const rate = 0.5 + r.next() * 2.5;
    for (let t = r.next() * 1000; t < duration; t += r.exponential(1000 / rate)) emit(t, c, 0);
  }
  // An office behind one NAT address: forty people's page loads share it.
  const office = add({ address: () => '198.51.100.20', agent: BROWSERS[0] as string, pages: PAGES, assets: ASSETS });
  for (let t = r.next() * 2000; t < duration; t += r.exponential(4_000)) {
    emit(t, office, 0);
    const assets = r.int(4, 16);
    for (let a = 0; a < assets; a++) emit(t + 50 + r.next() * 1500, office, 1);
  }
  // API clients: steady calls.
  for (let k = 0; k < 20; k++) {
    const address = `34.${r.int(0, 255)}.${r.int(0, 255)}.${r.int(1, 254)}`;
    const c = add({
      address: () => address,
      agent: 'okhttp/4.12.0',
      pages: ['/api/v1/orders', '/api/v1/items', '/api/v1/status'],
      assets: [],
    });
    const rate = 0.2 + r.next() * 2;
    for (let t = r.next() * 5000; t < duration; t += r.exponential(1000 / rate)) emit(t, c, 0);
  }
  // Scrapers: a few minutes at 10-40 requests per second, a few times.
  for (let k = 0; k < 3; k++) {
    const address = `45.${r.int(0, 255)}.${r.int(0, 255)}.${r.int(1, 254)}`;
    const c = add({
      address: () => address,
      agent: 'python-requests/2.32.3',
      pages: ['/products/1', '/products/2', '/products/3', '/search?q=a', '/search?q=b'],
      assets: [],
    });
    for (let b = 0; b < 3; b++) {
      const from = r.next() * duration;
      const rate = r.int(10, 40);
      const len = r.int(60_000, 240_000);
      for (let t = from; t < from + len; t += r.exponential(1000 / rate)) emit(t, c, 0);
    }
  }
  return { clients, events };
}

/**
 * Yields the log's lines in batches, in time order unless `order` says otherwise (one-second resolution,
 * as `$time_local` has).
 * Everything is generated up front into compact arrays (about 24 bytes per line), then formatted lazily.
 */
export function* generateAccessLog(options: AccessLogOptions = {}): Generator<string[]> {
  const r = createRandom(options.seed ?? 1);
  const start = options.startMs ?? Date.UTC(2026, 10, 23, 9, 0, 0);
  const duration = (options.durationS ?? 1800) * 1000;
  const { clients, events } = population(r, duration, options.visitors);
  events.sort((a, b) => a.at - b.at);
  const written = writeOrder(events, options.order ?? 'time', options.seed ?? 1, start);
  let batch: string[] = [];
  let lastSecond = -1;
  let time = '';
  for (const e of written) {
    const second = Math.floor((start + e.at) / 1000);
    if (second !== lastSecond) {
      lastSecond = second;
      time = formatNginxTime(second * 1000);
    }
    const c = clients[e.client] as Client;
    const path = e.line === 0 ? r.pick(c.pages) : r.pick(c.assets);
    const roll = r.next();
    const status = roll < 0.9 ? 200 : roll < 0.96 ? 304 : roll < 0.99 ? 404 : 500;
    const bytes = status === 304 ? 0 : r.int(200, 60_000);
    const referer = e.line === 0 ? '-' : 'https://shop.example/';
    batch.push(`${c.address(r)} - - [${time}] "GET ${path} HTTP/1.1" ${status} ${bytes} "${referer}" "${c.agent}" "-"`);
    if (batch.length === 10_000) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}
