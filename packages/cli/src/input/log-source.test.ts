/**
 * @module Reading log files: gzip by magic bytes, CRLF, a byte order mark, UTF-8 across chunks, time-ordered merging, malformed lines with their line numbers, unreadable files.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { CliError } from '../cli-error.js';
import { decodeLoose, MAX_LINE_CHARS, readLines } from './line-reader.js';
import { createInputStats, type InputStats, mergeByTime, readRequests, type SourceOptions } from './log-source.js';
import { createKeyer } from './request-key.js';
import type { LogRequest } from './request-parser.js';

const dir = mkdtempSync(join(tmpdir(), 'tollgate-cli-source-'));
const T = 1_700_000_000_000;

function file(name: string, content: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

const options: SourceOptions = {
  format: undefined,
  key: undefined,
  costField: undefined,
  nginxExtraFields: ['http_x_forwarded_for'],
  timeField: undefined,
  keyer: createKeyer({ logger: { warn() {}, error() {} } }),
};

async function readAll(paths: string[]): Promise<{ requests: LogRequest[]; stats: InputStats }> {
  const stats = createInputStats(paths);
  const requests: LogRequest[] = [];
  for await (const batch of mergeByTime(paths.map((_, i) => readRequests(i, options, stats)))) requests.push(...batch);
  return { requests, stats };
}

describe('reading files', () => {
  it('reads gzip by its magic bytes whatever the name, CRLF endings, and a last line without newline', async () => {
    const text = `${T},a\r\n${T + 1},b\r\n${T + 2},c`;
    const plain = await readAll([file('plain.csv', text)]);
    const zipped = await readAll([file('zipped.csv', gzipSync(text))]);
    expect(plain.requests.map((r) => r.key)).toEqual(['a', 'b', 'c']);
    expect(zipped.requests).toEqual(plain.requests);
  });

  it('drops a UTF-8 byte order mark, plain and gzip: the first line is read like the others', async () => {
    const json = `\ufeff{"time":${T},"key":"a"}\n{"time":${T + 1},"key":"b"}\n`;
    for (const content of [json, gzipSync(json)]) {
      const { requests, stats } = await readAll([file('bom.jsonl', content)]);
      expect(requests.map((r) => r.key)).toEqual(['a', 'b']);
      expect(stats.malformed).toBe(0);
    }
    const { requests } = await readAll([file('bom-dump', `\ufeff${T},a\n${T + 1},b\n`)]);
    expect(requests.map((r) => r.key)).toEqual(['a', 'b']);
  });

  it('decodes UTF-8 split across chunks once a chunk is not ASCII', async () => {
    const key = 'clé-ü-✓';
    const lines = Array.from({ length: 120_000 }, (_, i) => `${T + i},${i % 2 === 0 ? key : 'plain'}`);
    const { requests } = await readAll([file('utf8.csv', lines.join('\n'))]);
    expect(requests).toHaveLength(120_000);
    expect(new Set(requests.map((r) => r.key))).toEqual(new Set([key, 'plain']));
  });

  it('reads the other bytes of a line that is not UTF-8 as latin1: distinct keys stay distinct clients, a JSON line still parses', async () => {
    const line = (key: number[]) => Buffer.concat([Buffer.from(`${T},`), Buffer.from(key), Buffer.from('\n')]);
    const bytes = Buffer.concat([
      line([0x63, 0x61, 0x66, 0xe9]), // 'caf' then latin1 é
      line([0x63, 0x61, 0x66, 0xe8]),
      line([0xff, 0xfe]),
      line([0xfe, 0xff]),
      line([...Buffer.from('café')]), // valid UTF-8, beside the others
      line([0xc3, 0xa9, 0xed, 0xa0, 0x80, 0xe2, 0x9c]), // é, an encoded surrogate (invalid), a cut ✓
    ]);
    const keys = ['café', 'cafè', 'ÿþ', 'þÿ', 'café', 'é\u00ed\u00a0\u0080\u00e2\u009c'];
    for (const content of [bytes, gzipSync(bytes)]) {
      const { requests, stats } = await readAll([file('latin1.csv', content)]);
      expect(requests.map((r) => r.key)).toEqual(keys);
      expect(stats.malformed).toBe(0);
    }
    // A long file: the invalid bytes land in chunks of their own and across chunk boundaries.
    const many = Buffer.concat(Array.from({ length: 20_000 }, () => bytes));
    const { requests } = await readAll([file('latin1-many.csv', many)]);
    expect(requests).toHaveLength(120_000);
    expect(new Set(requests.map((r) => r.key))).toEqual(new Set(keys));
    expect(decodeLoose(Buffer.from([0xf0, 0x9f, 0x98, 0x80, 0xf4, 0x90, 0x80, 0x80, 0xc0, 0xaf]))).toBe(
      '😀\u00f4\u0090\u0080\u0080\u00c0\u00af',
    );
    // A JSON line with a latin1 byte in a field replay does not use: read (before: "not JSON", \xE9 being no JSON escape).
    const json = Buffer.concat([Buffer.from(`{"time":${T},"key":"k","ua":"caf`), Buffer.from([0xe9]), Buffer.from('"}\n')]);
    const parsed = await readAll([file('latin1.jsonl', json)]);
    expect(parsed.requests.map((r) => r.key)).toEqual(['k']);
    expect(parsed.stats.malformed).toBe(0);
  });

  it('merges several files in time order, ties to the earlier file', async () => {
    const a = file('a.csv', `${T},a1\n${T + 20},a2\n${T + 40},a3\n`);
    const b = file('b.jsonl', `{"time":${T + 10},"key":"b1"}\n{"time":${T + 20},"key":"b2"}\n{"time":${T + 50},"key":"b3"}\n`);
    const { requests, stats } = await readAll([a, b]);
    expect(requests.map((r) => r.key)).toEqual(['a1', 'b1', 'a2', 'b2', 'a3', 'b3']);
    expect(stats.files.map((f) => f.format)).toEqual(['csv', 'jsonl']);
  });

  it('counts malformed lines with their file and line number and goes on', async () => {
    const path = file(
      'bad.log',
      [
        `1.2.3.4 - - [23/Nov/2026:09:00:01 +0000] "GET / HTTP/1.1" 200 5 "-" "ua" "-"`,
        'this is not a log line',
        '',
        `1.2.3.4 - - [31/Foo/2026:09:00:01 +0000] "GET / HTTP/1.1" 200 5 "-" "ua" "-"`,
        `1.2.3.5 - - [23/Nov/2026:09:00:02 +0000] "GET / HTTP/1.1" 200 5 "-" "ua" "-"`,
      ].join('\n'),
    );
    const { requests, stats } = await readAll([path]);
    expect(requests.map((r) => r.key)).toEqual(['ip:1.2.3.4', 'ip:1.2.3.5']);
    expect(stats).toMatchObject({ lines: 5, requests: 2, malformed: 2 });
    expect(stats.malformedSamples).toEqual([
      { file: path, line: 2, reason: 'not an nginx combined line (no [time])', text: 'this is not a log line' },
      { file: path, line: 4, reason: "bad time '31/Foo/2026:09:00:01 +0000'", text: expect.stringContaining('31/Foo') },
    ]);
  });

  it('keeps 20 samples but counts every malformed line', async () => {
    const path = file('many-bad.csv', Array.from({ length: 50 }, () => 'nope').join('\n'));
    const { stats } = await readAll([path]);
    expect(stats.malformed).toBe(50);
    expect(stats.malformedSamples).toHaveLength(20);
  });

  it('cuts a line longer than MAX_LINE_CHARS (a file without newlines never sits whole in memory), and counts it once', async () => {
    const huge = 'x'.repeat(3 * MAX_LINE_CHARS);
    const path = file('huge.csv', `${T},a\n${huge}\n${T + 1},b\n${huge}`);
    const { requests, stats } = await readAll([path]);
    expect(requests.map((r) => r.key)).toEqual(['a', 'b']);
    expect(stats).toMatchObject({ lines: 4, malformed: 2 });
    expect(stats.malformedSamples.map((m) => [m.line, m.reason])).toEqual([
      [2, 'expected time,key[,cost]'],
      [4, 'expected time,key[,cost]'],
    ]);
  });

  it('names a missing file in a coded error', async () => {
    expect(() => createInputStats([join(dir, 'missing.log')])).toThrow(CliError);
    await expect(readLines(join(dir, 'missing.log')).next()).rejects.toThrow(/ERR_RL_REPLAY_INPUT: cannot read .*missing\.log/);
  });

  it('reads a gzip cut short up to the cut, as zcat does, dropping the cut last line; other damage is an input error, not a crash', async () => {
    const whole = gzipSync(Array.from({ length: 20_000 }, (_, i) => `${T + i},client-${i % 7}`).join('\n'));
    const { requests, stats } = await readAll([file('cut.csv.gz', whole.subarray(0, Math.floor(whole.length / 2)))]);
    expect(stats.files[0]?.cutShort).toMatch(/unexpected end of file/);
    expect(requests.length).toBeGreaterThan(1_000);
    expect(requests.length).toBeLessThan(20_000);
    // Every request read is one of the file's: in order, keys whole (the cut line, maybe "client-" alone, dropped).
    expect(requests.every((r, i) => r.at === T + i && r.key === `client-${i % 7}`)).toBe(true);
    expect(stats.malformed).toBe(0);
    const garbled = Buffer.from(whole);
    garbled.fill(0x55, 200, 260);
    await expect(readAll([file('garbled.csv.gz', garbled)])).rejects.toThrow(/ERR_RL_REPLAY_INPUT/);
  });
});
