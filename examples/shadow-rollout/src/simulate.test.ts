import { describe, expect, it } from 'vitest';
import { formatReport, simulate } from './simulate.js';

describe('shadow rollout', () => {
  it('shows that the candidate blocks the cron bursts the fixed window allowed, and nothing of the steady client', async () => {
    const report = await simulate(2);
    const row = (name: string) => report.rows.find((r) => r.client === name);
    expect(row('steady')).toMatchObject({ requests: 120, enforcedRejected: 0, shadowRejected: 0 });
    expect(row('cron')?.enforcedRejected).toBe(0);
    expect(row('cron')?.newlyBlocked).toBeGreaterThan(50);
    expect(row('scraper')?.enforcedRejected).toBeGreaterThan(0);
    expect(report.totals.shadowOnly).toBe(report.rows.reduce((n, r) => n + r.newlyBlocked, 0));
    expect(formatReport(report)).toContain('all from: cron, scraper');
    const [candidate] = report.shadow;
    expect(candidate).toMatchObject({
      name: 'candidate',
      checks: report.totals.requests,
      wouldBlock: report.totals.shadowLimited,
      affectedKeys: 2,
    });
    expect(candidate?.topKeys.map((k) => k.key).sort()).toEqual(['client:cron', 'client:scraper']);
    expect(formatReport(report)).toMatch(
      /candidate: switching would block \d+\.\d% of requests, 2 clients, mostly (scraper and cron|cron and scraper)/,
    );
    // A ring of 12 intervals of 10 s: the last two minutes, the current (empty) interval last.
    expect(candidate?.intervals).toHaveLength(12);
    expect(candidate?.intervals.reduce((n, i) => n + i.checks, 0)).toBeLessThanOrEqual(report.totals.requests);
  });
});
