/**
 * @module Command-line options of `pnpm bench`. Unknown flags are errors: a typo must not silently
 * run the full benchmark.
 */

import { SECTION_ORDER, type SectionId } from './merge-results.js';

export type { SectionId };

export interface BenchOptions {
  /** Fewer runs, shorter rounds, no 1M-key cells: under two minutes. */
  readonly quick: boolean;
  /** A few tiny cells that only check the harness works (used by the test suite); implies `quick`. */
  readonly smoke: boolean;
  readonly sections: readonly SectionId[];
  /** Only cells whose id matches this (case-insensitive) regular expression. */
  readonly only: RegExp | undefined;
  /** Where RESULTS.md goes; undefined: the default for the mode. */
  readonly out: string | undefined;
  /** Runs each child process with `--cpu-prof`, profiles under bench/.results/profiles. */
  readonly profile: boolean;
  /** The HTTP load generator; undefined: wrk when installed, else autocannon. */
  readonly load: 'wrk' | 'autocannon' | undefined;
  readonly help: boolean;
}

export const USAGE = `Usage: pnpm bench [options]

  --quick            fewer runs and shorter rounds, no 1M-key cells (under two minutes)
  --smoke            a few tiny cells that only check the harness works (implies --quick)
  --sections A,B,... which sections to run (default: all): A decisions in process, B Redis, C HTTP,
                     D concurrency and shedding, H hot keys on one Redis (localBatch), I interleaved in one process (tollgate against
                     express-rate-limit and v0.1, and what each feature adds), O observability
                     overhead, R replay's lines per second.
                     With some sections only and an existing results file, only those sections (and
                     their rows of the Targets table) are rewritten; the rest of the file is kept
  --only REGEX       only the cells whose id matches, e.g. --only 'A/tollgate-gcra/100k' or 'I/over'
  --out FILE         where to write the results (default: bench/RESULTS.md for a full run,
                     bench/.results/RESULTS.quick.md or RESULTS.smoke.md otherwise)
  --profile          run every child process with --cpu-prof (bench/.results/profiles/)
  --load TOOL        wrk or autocannon (default: wrk when installed, else autocannon)
  --help             this text`;

const SECTIONS: readonly SectionId[] = SECTION_ORDER;

/** Parses `argv` (without node and the script). Throws a TypeError naming the bad flag. */
export function parseBenchOptions(argv: readonly string[]): BenchOptions {
  let quick = false;
  let smoke = false;
  let sections: SectionId[] = [...SECTIONS];
  let only: RegExp | undefined;
  let out: string | undefined;
  let profile = false;
  let load: BenchOptions['load'];
  let help = false;
  const value = (i: number, flag: string): string => {
    const v = argv[i + 1];
    if (v === undefined || v.startsWith('--')) throw new TypeError(`${flag} needs a value; see --help`);
    return v;
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    switch (arg) {
      case '--':
        break;
      case '--quick':
        quick = true;
        break;
      case '--smoke':
        smoke = true;
        quick = true;
        break;
      case '--profile':
        profile = true;
        break;
      case '--help':
      case '-h':
        help = true;
        break;
      case '--sections': {
        const list = value(i++, arg)
          .split(',')
          .map((s) => s.trim().toUpperCase());
        for (const s of list) {
          if (!SECTIONS.includes(s as SectionId)) throw new TypeError(`--sections: unknown section '${s}' (valid: ${SECTIONS.join(', ')})`);
        }
        sections = SECTIONS.filter((s) => list.includes(s));
        break;
      }
      case '--only': {
        const source = value(i++, arg);
        try {
          only = new RegExp(source, 'i');
        } catch (error) {
          throw new TypeError(`--only: not a regular expression: ${source} (${(error as Error).message})`);
        }
        break;
      }
      case '--load': {
        const tool = value(i++, arg);
        if (tool !== 'wrk' && tool !== 'autocannon') throw new TypeError(`--load: expected wrk or autocannon, got '${tool}'`);
        load = tool;
        break;
      }
      case '--out':
        out = value(i++, arg);
        break;
      default:
        throw new TypeError(`unknown option '${arg}'; see --help`);
    }
  }
  return { quick, smoke, sections, only, out, profile, load, help };
}
