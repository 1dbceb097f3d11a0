/**
 * @module Replays a few minutes of traffic through the rollout app over real HTTP, with a virtual clock
 * so it takes a second or two, and reports per client what the enforced policy blocked, what the
 * candidate would block, and where they disagree: the numbers a team reads before switching.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ShadowPolicyStats } from '@tollgate/core';
import { createApp } from './app.js';

/** A client: how many requests it sends at which second of each minute. */
interface Client {
  readonly name: string;
  readonly describe: string;
  /** Requests sent at second `s` (0-59) of every minute. */
  readonly at: (second: number) => number;
}

export const CLIENTS: readonly Client[] = [
  { name: 'steady', describe: '1 request per second', at: () => 1 },
  { name: 'cron', describe: '45 requests at the top of each minute', at: (s) => (s === 0 ? 45 : 0) },
  { name: 'scraper', describe: '3 requests per second', at: () => 3 },
];

export interface ClientRow {
  readonly client: string;
  readonly traffic: string;
  requests: number;
  enforcedRejected: number;
  shadowRejected: number;
  /** The candidate would block what the enforced policy let through. */
  newlyBlocked: number;
  /** The enforced policy blocked what the candidate would let through. */
  newlyAllowed: number;
}

export interface RolloutReport {
  readonly minutes: number;
  readonly rows: readonly ClientRow[];
  readonly totals: { requests: number; limited: number; shadowLimited: number; shadowOnly: number; enforcedOnly: number };
  /** `limiter.stats().shadow`: the candidate's own record (agreement, intervals, affected keys). */
  readonly shadow: readonly ShadowPolicyStats[];
}

export async function simulate(minutes = 3): Promise<RolloutReport> {
  let now = Date.UTC(2026, 10, 30, 12, 0, 0);
  const rows = new Map<string, ClientRow>(
    CLIENTS.map((c) => [
      c.name,
      { client: c.name, traffic: c.describe, requests: 0, enforcedRejected: 0, shadowRejected: 0, newlyBlocked: 0, newlyAllowed: 0 },
    ]),
  );
  const { app, limiter } = createApp({
    clock: () => now,
    onDecision: (d, client) => {
      const row = rows.get(client);
      if (row === undefined) return;
      const shadowBlocks = d.shadow?.allowed === false;
      row.requests += 1;
      if (d.limited) row.enforcedRejected += 1;
      if (shadowBlocks) row.shadowRejected += 1;
      if (shadowBlocks && !d.limited) row.newlyBlocked += 1;
      if (d.limited && !shadowBlocks) row.newlyAllowed += 1;
    },
  });
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  try {
    for (let second = 0; second < minutes * 60; second++) {
      for (const client of CLIENTS) {
        const n = client.at(second % 60);
        for (let i = 0; i < n; i++) {
          const res = await fetch(`http://127.0.0.1:${port}/api/items`, { headers: { 'x-client': client.name } });
          await res.arrayBuffer();
        }
      }
      now += 1000;
    }
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  const { requests, limited, shadowLimited, shadowOnly, enforcedOnly, shadow } = limiter.stats();
  return { minutes, rows: [...rows.values()], totals: { requests, limited, shadowLimited, shadowOnly, enforcedOnly }, shadow };
}

function pct(n: number, of: number): string {
  return of === 0 ? '0%' : `${((100 * n) / of).toFixed(1)}%`;
}

/** One line per shadow policy from `limiter.stats().shadow`: the numbers that decide the switch. */
export function formatShadowVerdicts(shadow: readonly ShadowPolicyStats[]): string[] {
  return shadow.flatMap((s) => {
    const top = s.topKeys.map((k) => k.key.replace(/^client:/, ''));
    const rates = s.intervals.map((i) => pct(i.wouldBlock, i.checks)).join(' ');
    return [
      `${s.name}: switching would block ${pct(s.wouldBlock, s.checks)} of requests, ${s.affectedKeys} client${s.affectedKeys === 1 ? '' : 's'}` +
        (top.length === 0 ? '' : `, mostly ${top.slice(0, 2).join(' and ')}`) +
        `; it agrees with the enforced verdict on ${pct(s.agreement * s.checks, s.checks)} of requests.`,
      `${s.name}: would-block rate per ${s.intervalMs / 1000} s, last ${s.intervals.length} intervals: ${rates}`,
    ];
  });
}

/** The comparison as a table plus what it means for the switch. */
export function formatReport(report: RolloutReport): string {
  const header = ['client', 'traffic', 'requests', 'fixed-window blocked', 'gcra would block', 'newly blocked', 'newly allowed'];
  const body = report.rows.map((r) => [
    r.client,
    r.traffic,
    String(r.requests),
    `${r.enforcedRejected} (${pct(r.enforcedRejected, r.requests)})`,
    `${r.shadowRejected} (${pct(r.shadowRejected, r.requests)})`,
    String(r.newlyBlocked),
    String(r.newlyAllowed),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((row) => (row[i] as string).length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] as number))
      .join('  ')
      .trimEnd();
  const t = report.totals;
  const hit = report.rows.filter((r) => r.newlyBlocked > 0).map((r) => r.client);
  return [
    `Shadow rollout over ${report.minutes} simulated minutes: fixed-window 60/min enforced, gcra 60/min burst 10 in shadow`,
    line(header),
    line(widths.map((w) => '-'.repeat(w))),
    ...body.map(line),
    '',
    `limiter.stats(): ${t.requests} requests, ${t.limited} blocked, ${t.shadowLimited} would be blocked by the candidate; ` +
      `${t.shadowOnly} newly blocked, ${t.enforcedOnly} newly allowed.`,
    hit.length === 0
      ? 'Switching blocks nobody new: safe to switch.'
      : `Switching would newly block ${pct(t.shadowOnly, t.requests)} of requests, all from: ${hit.join(', ')}. ` +
        'Clients within the rate see no change; decide for each listed one whether its bursts should pass (raise burst) ' +
        'or be smoothed (tell it, then switch).',
    ...formatShadowVerdicts(report.shadow),
  ].join('\n');
}
