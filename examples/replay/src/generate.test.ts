/**
 * @module The shipped example log is what its seeded generator writes, and the README command replays it in seconds.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { generateAccessLog, parseCandidates, runReplay } from '@tollgate/cli';
import { describe, expect, it } from 'vitest';
import { LOG_PATH } from './generate.js';

describe('examples/replay/access.log.gz', () => {
  it('is what the generator writes (seed 1), so the shipped file can always be regenerated', () => {
    const shipped = createHash('sha256')
      .update(gunzipSync(readFileSync(LOG_PATH)))
      .digest('hex');
    const hash = createHash('sha256');
    for (const batch of generateAccessLog({ seed: 1 })) hash.update(`${batch.join('\n')}\n`);
    expect(hash.digest('hex')).toBe(shipped);
  });

  it("replays with the README's two candidates without a malformed line", async () => {
    const report = await runReplay({
      files: [LOG_PATH],
      candidates: parseCandidates(['{"limit":100,"windowMs":60000}', '{"algorithm":"sliding-window","limit":80,"windowMs":60000}']),
    });
    expect(report.input).toMatchObject({ lines: 360_458, requests: 360_458, malformed: 0, outOfOrder: 0 });
    expect(report.clients).toBe(2529);
    // The scrapers are what either candidate stops; the stricter sliding window also catches crawlers and the office NAT.
    expect(report.candidates[0]?.topRejected[0]?.key).toMatch(/^ip:45\./);
    expect(report.candidates[1]?.clientsRejected).toBeGreaterThan(report.candidates[0]?.clientsRejected ?? 0);
  });
});
