#!/usr/bin/env node
/**
 * @module The `tollgate` bin: runs the CLI on the process's arguments and exits with its code.
 */
import { runCli } from './cli.js';

runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin }).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`tollgate: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
