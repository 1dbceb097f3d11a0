/**
 * @module The demo (`pnpm demo`): starts the Express example on a free port, sends a scripted burst,
 * prints each response's status and rate-limit headers as a table and one 429 body, then runs the
 * shadow-rollout comparison. Exits 0 when everything answered as expected.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '@tollgate/example-express';
import { formatReport, simulate } from '@tollgate/example-shadow-rollout';

const started = Date.now();
const server = await new Promise<Server>((resolve) => {
  const s = createApp().listen(0, '127.0.0.1', () => resolve(s));
});
const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
console.log(`Express example listening on ${base}; policies "burst" (gcra, 5 per 10 s) and "hourly" (fixed-window, 100 per hour)\n`);

const script = [...Array.from({ length: 7 }, () => '/api/hello'), '/health', '/api/report?rows=3'];
const rows: string[][] = [['#', 'request', 'status', 'RateLimit', 'Retry-After']];
let policy = '';
let problem = '';
for (const [i, path] of script.entries()) {
  const res = await fetch(base + path);
  const body = await res.text();
  policy ||= res.headers.get('ratelimit-policy') ?? '';
  if (res.status === 429 && problem === '') problem = JSON.stringify(JSON.parse(body), null, 2);
  rows.push([String(i + 1), `GET ${path}`, String(res.status), res.headers.get('ratelimit') ?? '-', res.headers.get('retry-after') ?? '-']);
}
server.close();
const widths = (rows[0] as string[]).map((_, c) => Math.max(...rows.map((r) => (r[c] as string).length)));
for (const r of rows)
  console.log(
    r
      .map((cell, c) => cell.padEnd(widths[c] as number))
      .join('  ')
      .trimEnd(),
  );
console.log(`\nRateLimit-Policy: ${policy}  (the same on every limited response; /health is skipped: no headers)`);
console.log(`\nThe first 429 body (Content-Type: application/problem+json, Cache-Control: no-store):\n${problem}\n`);

console.log(formatReport(await simulate(2)));
const statuses = rows.slice(1).map((r) => r[2]);
const expected = ['200', '200', '200', '200', '200', '429', '429', '200', '429'];
if (statuses.join() !== expected.join()) {
  console.error(`\nUnexpected statuses ${statuses.join(' ')}; expected ${expected.join(' ')}`);
  process.exit(1);
}
console.log(`\nDemo finished in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
