/**
 * @module `pnpm --filter @tollgate/cli bench`: how many log lines per second `tollgate replay` gets
 * through with three candidates (gcra, sliding-window, leaky-bucket) on this machine. The input is a
 * synthetic nginx log (two hours of traffic, ~1.4 million lines, gzip), generated once into the OS temp
 * directory; each run reads, inflates, parses, keys and replays the whole file in one process, as the
 * CLI does. Prints the runs and the median (wall clock); the README quotes the median. The machine is
 * shared, so each run also prints lines per CPU second (user + system time of this process, inflating
 * included), which other processes on the machine disturb much less than the wall clock.
 */
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { generateAccessLog, parseCandidates, runReplay } from '../src/index.js';

const RUNS = Number(process.env.REPLAY_BENCH_RUNS ?? 5);
const DURATION_S = Number(process.env.REPLAY_BENCH_DURATION_S ?? 7200);
const path = join(tmpdir(), `tollgate-replay-bench-${DURATION_S}s.log.gz`);

if (!existsSync(path)) {
  const parts: string[] = [];
  for (const batch of generateAccessLog({ seed: 7, durationS: DURATION_S })) parts.push(batch.join('\n'));
  writeFileSync(path, gzipSync(`${parts.join('\n')}\n`, { level: 6 }));
}

const candidates = parseCandidates([
  '{"limit":100,"windowMs":60000}',
  '{"algorithm":"sliding-window","limit":80,"windowMs":60000}',
  '{"algorithm":"leaky-bucket","limit":5,"windowMs":1000,"burst":20}',
]);

const rates: number[] = [];
const cpuRates: number[] = [];
let lines = 0;
for (let run = 0; run < RUNS; run++) {
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const report = await runReplay({ files: [path], candidates });
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(c0);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  lines = report.input.lines;
  rates.push(lines / seconds);
  cpuRates.push(lines / cpuSeconds);
  console.log(
    `run ${run + 1}: ${lines} lines in ${seconds.toFixed(2)} s = ${Math.round(lines / seconds).toLocaleString('en-US')} lines/s ` +
      `(${cpuSeconds.toFixed(2)} CPU s = ${Math.round(lines / cpuSeconds).toLocaleString('en-US')} lines per CPU second)`,
  );
}
const cpuMedian = [...cpuRates].sort((a, b) => a - b)[Math.floor(cpuRates.length / 2)] as number;
const sorted = [...rates].sort((a, b) => a - b);
const median = sorted[Math.floor(sorted.length / 2)] as number;
console.log(
  `replay, 3 candidates, ${(statSync(path).size / 1e6).toFixed(1)} MB gzip, ${lines} lines: median ${Math.round(median).toLocaleString('en-US')} lines/s ` +
    `(best ${Math.round(sorted[sorted.length - 1] as number).toLocaleString('en-US')}; ${Math.round(cpuMedian).toLocaleString('en-US')} lines per CPU second; node ${process.version}, ${availableParallelism()} x ${cpus()[0]?.model ?? 'cpu'}, load ${loadavg()[0]?.toFixed(2)})`,
);
