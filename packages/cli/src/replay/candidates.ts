/**
 * @module `--policy` values to candidates. A value is JSON (or the path of a JSON file) holding a policy
 * as the core takes it (`{ "limit": 100, "windowMs": 60000 }`), a list of policies (all enforced
 * together: the most restrictive binds), or a plan `{ "name": "...", "policies": [...] }`. Each is
 * validated by the core itself, so a candidate the CLI accepts is one `createLimiter` accepts.
 */
import { readFileSync } from 'node:fs';
import { createLimiter, MemoryStore, type PolicyOptions, RateLimitConfigError } from '@tollgate/core';
import { CliError } from '../cli-error.js';
import type { Candidate } from './replay-engine.js';

/** `60000` -> `60s`, `90000` -> `90s`, `3600000` -> `1h`, `250` -> `250ms`. */
export function formatWindow(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000}h`;
  if (ms % 60_000 === 0 && ms >= 600_000) return `${ms / 60_000}m`;
  if (ms % 1000 === 0) return `${ms / 1000}s`;
  return `${ms}ms`;
}

/** A short label: `gcra 100/60s`, `token-bucket 10/1s burst 20`, joined by ` + ` for a list. */
export function describePolicies(policies: readonly PolicyOptions[]): string {
  return policies
    .map((p) => {
      const extra = [
        p.burst === undefined ? '' : ` burst ${p.burst}`,
        p.anchor === 'first-request' ? ' anchored' : '',
        p.delayAfter === undefined ? '' : ` delayAfter ${p.delayAfter}`,
      ].join('');
      return `${p.algorithm ?? 'gcra'} ${p.limit}/${formatWindow(p.windowMs)}${extra}`;
    })
    .join(' + ');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * A list's policies without a `name` named by their shape (`10/1s`, `1000/1h`; `#2` after a shape already
 * taken): the core needs each policy of a plan named apart (ERR_RL_DUPLICATE_POLICY), and the README's
 * list, a policy per second and one per hour, is written without names. A lone policy keeps `default`.
 */
function namedInList(list: PolicyOptions[]): PolicyOptions[] {
  if (list.length < 2) return list;
  const taken = new Set(list.map((p) => (isObject(p) ? p.name : undefined)).filter((n) => n !== undefined));
  return list.map((p, i) => {
    if (!isObject(p) || p.name !== undefined || typeof p.limit !== 'number' || typeof p.windowMs !== 'number') return p;
    const shape = `${p.limit}/${formatWindow(p.windowMs)}`;
    const name = taken.has(shape) ? `${shape} #${i + 1}` : shape;
    taken.add(name);
    return { ...p, name };
  });
}

/**
 * The JSON of a `--policy` value: the text itself when it is JSON (an object or a list, or any JSON that is
 * no file's name), else the file it names. A leading UTF-8 byte order mark, which Windows editors write,
 * is no part of the JSON (before: "not valid JSON"). A value that is JSON but neither an object nor a
 * list (`null`, `42`, `"x"`) is said to be so (before: "neither JSON nor a readable file (ENOENT)").
 */
function readPolicyJson(text: string, where: string, read: (path: string) => string): unknown {
  const trimmed = text.trim();
  let source = trimmed;
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) {
    try {
      source = read(trimmed);
    } catch (error) {
      if (parsesAsJson(trimmed)) source = trimmed;
      else {
        throw new CliError(
          'ERR_RL_CLI_USAGE',
          `${where} is neither JSON nor a readable file: '${trimmed}' (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
        );
      }
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(source.replace(/^\uFEFF/, ''));
  } catch (error) {
    throw new CliError('ERR_RL_CLI_USAGE', `${where} is not valid JSON (${(error as Error).message})`);
  }
  if (value === null || typeof value !== 'object') {
    throw new CliError(
      'ERR_RL_CLI_USAGE',
      `${where} is ${value === null ? 'JSON null' : `the JSON ${typeof value} ${JSON.stringify(value).slice(0, 40)}`}, not a policy: ` +
        `give an object ({"limit":100,"windowMs":60000}), a list of them, or a plan {"name":...,"policies":[...]}`,
    );
  }
  return value;
}

function parsesAsJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** Parses `--policy` value number `index` (0-based). Throws CliError for unreadable input, RateLimitConfigError (prefixed) for a bad policy. */
export function parseCandidate(text: string, index: number, read: (path: string) => string = (p) => readFileSync(p, 'utf8')): Candidate {
  const where = `--policy #${index + 1}`;
  const value = readPolicyJson(text, where, read);
  let name: string | undefined;
  let policies: unknown;
  if (Array.isArray(value)) policies = value;
  else if (isObject(value) && 'policies' in value) {
    const extra = Object.keys(value).filter((k) => k !== 'policies' && k !== 'name');
    if (extra.length > 0) {
      throw new CliError(
        'ERR_RL_CLI_USAGE',
        `${where}: a plan has only 'name' and 'policies'; unexpected ${extra.map((k) => `'${k}'`).join(', ')}`,
      );
    }
    if (value.name !== undefined && typeof value.name !== 'string')
      throw new CliError('ERR_RL_CLI_USAGE', `${where}: 'name' must be a string`);
    name = value.name as string | undefined;
    policies = value.policies;
  } else policies = value;
  const list = namedInList((Array.isArray(policies) ? policies : [policies]) as PolicyOptions[]);
  if (list.some((p) => isObject(p) && (p as { algorithm?: unknown }).algorithm === 'concurrency')) {
    throw new CliError(
      'ERR_RL_CLI_USAGE',
      `${where}: a 'concurrency' policy limits requests in flight, and a log line is one moment, not a duration: replay rate policies only`,
    );
  }
  try {
    // The core validates: the same errors, with the same option paths, as createLimiter in an app.
    createLimiter({ policies: list, store: new MemoryStore({ sweepIntervalMs: 0 }) });
  } catch (error) {
    if (error instanceof RateLimitConfigError) {
      error.message = `${where}: ${error.message}`;
    }
    throw error;
  }
  return { label: name ?? describePolicies(list), policies: Object.freeze(list.map((p) => Object.freeze({ ...p }))) };
}

/** Every `--policy` value; labels made unique by a `#n` suffix. */
export function parseCandidates(values: readonly string[], read?: (path: string) => string): Candidate[] {
  const candidates = values.map((v, i) => parseCandidate(v, i, read));
  const seen = new Map<string, number>();
  return candidates.map((c, i) => {
    const count = seen.get(c.label) ?? 0;
    seen.set(c.label, count + 1);
    return count === 0 ? c : { ...c, label: `${c.label} #${i + 1}` };
  });
}
