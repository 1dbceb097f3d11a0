/**
 * @module Loads an optional peer dependency (`@opentelemetry/api`, `prom-client`) at first use, so
 * tollgate never imports it at start-up and keeps working when it is not installed. The lookup is
 * synchronous (`require` from this package's own location), so the first decision already reports.
 */
import { createRequire } from 'node:module';

type Resolver = (name: string) => unknown;

function defaultResolver(): Resolver {
  // The CJS build turns import.meta.url into this file's URL too (the bundler's shim).
  const load = createRequire(import.meta.url);
  return (name) => load(name);
}

let resolver: Resolver | undefined;

function isNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'MODULE_NOT_FOUND' || code === 'ERR_MODULE_NOT_FOUND' || code === 'ERR_PACKAGE_PATH_NOT_EXPORTED';
}

/** The module `name`, or undefined when it is not installed. Other load errors are thrown. */
export function loadOptional<T>(name: string): T | undefined {
  resolver ??= defaultResolver();
  try {
    return resolver(name) as T;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}
