/**
 * @module Requests from log files: each file is read, its format recognised and its lines parsed, in
 * batches; malformed lines are counted and sampled with their file and line number, never thrown.
 * Several files are merged in time order (each file is taken to be in time order, as logs are).
 */

import { fileSize, readLines } from './line-reader.js';
import { createLineParser, detectFormat, type LogFormat, type LogRequest, type ParserOptions } from './request-parser.js';

/** How many malformed lines are kept as examples (all are counted). */
export const MALFORMED_SAMPLES = 20;

export interface MalformedLine {
  readonly file: string;
  readonly line: number;
  readonly reason: string;
  /** The line, cut to 160 characters. */
  readonly text: string;
}

/** What was read of one file; `file` is its name in the report (`-` for standard input). */
export interface FileStats {
  file: string;
  format: LogFormat | undefined;
  lines: number;
  requests: number;
  malformed: number;
  /** Set when the file ended early (a gzip cut short): zlib's reason; its lines up to the cut were read. */
  cutShort?: string;
}

export interface InputStats {
  /** Per file, in the order given. */
  readonly files: FileStats[];
  /** Where each file of `files` is read from (standard input's temporary copy for `-`). */
  readonly paths: readonly string[];
  lines: number;
  requests: number;
  malformed: number;
  readonly malformedSamples: MalformedLine[];
  /** Bytes of all files, and read so far (compressed bytes for gzip): for a progress bar. */
  readonly totalBytes: number;
  readBytes: number;
}

export type SourceOptions = Omit<ParserOptions, 'format'> & { readonly format: LogFormat | undefined };

/** Stats of reading `paths`, each named in the report by its entry in `names` (default: the path). */
export function createInputStats(paths: readonly string[], names: readonly string[] = paths): InputStats {
  let totalBytes = 0;
  for (const p of paths) totalBytes += fileSize(p);
  return {
    files: paths.map((path, i) => ({ file: names[i] ?? path, format: undefined, lines: 0, requests: 0, malformed: 0 })),
    paths,
    lines: 0,
    requests: 0,
    malformed: 0,
    malformedSamples: [],
    totalBytes,
    readBytes: 0,
  };
}

/** The requests of file `index` of `stats.files`, in batches. */
export async function* readRequests(index: number, options: SourceOptions, stats: InputStats): AsyncGenerator<LogRequest[]> {
  const file = stats.files[index] as FileStats;
  const path = stats.paths[index] as string;
  let parse: ((line: string, n: number) => LogRequest | string | undefined) | undefined;
  let lineNumber = 0;
  let counted = 0;
  const onBytes = (bytes: number) => {
    stats.readBytes += bytes - counted;
    counted = bytes;
  };
  const onCut = (why: string) => {
    file.cutShort = why;
  };
  for await (const lines of readLines(path, onBytes, onCut)) {
    if (parse === undefined) {
      file.format = options.format ?? detectFormat(path, lines);
      parse = createLineParser({ ...options, format: file.format });
    }
    const batch: LogRequest[] = [];
    for (let i = 0; i < lines.length; i++) {
      lineNumber += 1;
      const line = lines[i] as string;
      const r = parse(line, lineNumber);
      if (r === undefined) continue;
      if (typeof r === 'string') {
        file.malformed += 1;
        stats.malformed += 1;
        if (stats.malformedSamples.length < MALFORMED_SAMPLES) {
          stats.malformedSamples.push({
            file: file.file,
            line: lineNumber,
            reason: r,
            text: line.length > 160 ? `${line.slice(0, 157)}...` : line,
          });
        }
        continue;
      }
      batch.push(r);
    }
    file.lines = lineNumber;
    file.requests += batch.length;
    stats.lines += lines.length;
    stats.requests += batch.length;
    if (batch.length > 0) yield batch;
  }
}

const MERGED_BATCH = 8192;

/** The batches of several sources merged by time (stable: ties go to the earlier source). */
export async function* mergeByTime(sources: readonly AsyncIterator<LogRequest[]>[]): AsyncGenerator<LogRequest[]> {
  if (sources.length === 1) {
    const only = sources[0] as AsyncIterator<LogRequest[]>;
    for (;;) {
      const next = await only.next();
      if (next.done === true) return;
      yield next.value;
    }
  }
  const heads: (LogRequest[] | undefined)[] = [];
  const at: number[] = [];
  for (const s of sources) {
    const next = await s.next();
    heads.push(next.done === true ? undefined : next.value);
    at.push(0);
  }
  let out: LogRequest[] = [];
  for (;;) {
    let best = -1;
    let bestAt = Number.POSITIVE_INFINITY;
    for (let i = 0; i < heads.length; i++) {
      const h = heads[i];
      if (h === undefined) continue;
      const t = (h[at[i] as number] as LogRequest).at;
      if (t < bestAt) {
        bestAt = t;
        best = i;
      }
    }
    if (best < 0) break;
    const h = heads[best] as LogRequest[];
    const j = at[best] as number;
    out.push(h[j] as LogRequest);
    if (j + 1 < h.length) {
      at[best] = j + 1;
    } else {
      if (out.length > 0) {
        yield out;
        out = [];
      }
      const next = await (sources[best] as AsyncIterator<LogRequest[]>).next();
      heads[best] = next.done === true ? undefined : next.value;
      at[best] = 0;
    }
    if (out.length >= MERGED_BATCH) {
      yield out;
      out = [];
    }
  }
  if (out.length > 0) yield out;
}
