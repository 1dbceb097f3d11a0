/**
 * @module tollgate decides as nginx `limit_req` does, checked against a real nginx on every run: the
 * script packages/cli/scripts/nginx-parity.ts starts one on a free loopback port, sends 360 timed
 * requests to three locations (rate=10r/s with burst=5 nodelay, no burst, burst=5 delaying) and
 * compares every verdict and delay with tollgate's on nginx's own arrival times. Without nginx the
 * suite says so loudly and skips, unless TOLLGATE_REQUIRE_NGINX=1 (set by .ci/run), which turns the
 * skip into a failure.
 */
import { describe, expect, it } from 'vitest';
import { CASES, findNginx, formatParity, runNginxParity } from '../../scripts/nginx-parity.js';

const REQUIRED = process.env.TOLLGATE_REQUIRE_NGINX === '1';
const nginx = findNginx();

function describeNginx(name: string, fn: () => void): void {
  if (nginx !== undefined) {
    describe(name, fn);
    return;
  }
  if (REQUIRED) {
    describe(name, () => {
      it('needs nginx', () => {
        throw new Error('TOLLGATE_REQUIRE_NGINX=1 but nginx cannot be run (not /usr/sbin/nginx nor on PATH): apt-get install nginx');
      });
    });
    return;
  }
  console.warn(`\n*** nginx not available, skipping "${name}": no /usr/sbin/nginx nor nginx on PATH (apt-get install nginx) ***\n`);
  describe.skip(name, fn);
}

describeNginx('parity with nginx limit_req (a real nginx)', () => {
  it('every verdict matches, and nginx delays each queued request as long as tollgate says (plus its timer lateness)', async () => {
    const report = await runNginxParity({ requests: 120, seed: 1 });
    console.log(formatParity(report));
    expect(report.cases.map((c) => c.name)).toEqual(CASES.map((c) => c.name));
    for (const c of report.cases) {
      expect({ name: c.name, requests: c.requests, mismatches: c.mismatches, samples: c.samples }).toEqual({
        name: c.name,
        requests: 120,
        mismatches: 0,
        samples: [],
      });
      // Something was rejected in each case, or the comparison proves little.
      expect(c.nginxAdmitted).toBeLessThan(c.requests);
      expect(c.nginxAdmitted).toBeGreaterThan(0);
    }
    const delaying = report.cases[2];
    expect(delaying?.delayed).toBeGreaterThan(10);
    // nginx truncates a delay to the ms and tollgate rounds up: at 10r/s both are whole; nginx's timer can only fire late.
    expect(delaying?.delayDiffMs[0]).toBeGreaterThanOrEqual(-1);
    expect(delaying?.delayDiffMs[1]).toBeLessThan(250);
  }, 90_000);
});
