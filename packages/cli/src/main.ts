#!/usr/bin/env node
/**
 * @module The `tollgate` bin: runs the CLI on the process's arguments and exits with its code.
 */
import { readFileSync } from 'node:fs';
import { runCli } from './cli.js';

// The package's own package.json: beside src/ when run from the sources, beside dist/ when built.
const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, version }).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`tollgate: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
