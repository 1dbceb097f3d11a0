/**
 * @module How a logged request becomes a rate-limit key, with the core's own key functions so a replay
 * keys requests exactly as the adapters would: `keys.ip()` (trusted proxies reading a logged
 * X-Forwarded-For, IPv6 grouped by /64), `keys.header(name)` (hashed, `apikey:<digest>`), or a field
 * taken as it is.
 */

import { type IpKeyOptions, type KeyFunction, keys, type Logger, RateLimitConfigError, type RequestView } from '@tollgate/core';
import { createDiagnostics } from '@tollgate/core/adapter';
import { ownString } from './own-string.js';

export type KeySpec =
  | { readonly kind: 'ip' }
  | { readonly kind: 'header'; readonly name: string }
  | { readonly kind: 'field'; readonly name: string };

/** `ip`, `header:<name>` or `field:<name>`; undefined when the text is none of them. */
export function parseKeySpec(text: string): KeySpec | undefined {
  if (text === 'ip') return { kind: 'ip' };
  const colon = text.indexOf(':');
  const kind = text.slice(0, colon);
  const name = text.slice(colon + 1);
  if (colon < 0 || name === '') return undefined;
  if (kind === 'header') return { kind: 'header', name: name.toLowerCase() };
  if (kind === 'field') return { kind: 'field', name };
  return undefined;
}

export interface KeyerOptions {
  readonly ip?: Omit<IpKeyOptions, 'logger'>;
  /** Receives the key functions' warn-once diagnostics (a logged X-Forwarded-For from an untrusted peer). */
  readonly logger: Logger;
}

/** Derives keys from logged values; undefined when the line gives no key. */
export interface Keyer {
  /** The client key from the logged peer address and X-Forwarded-For (`-` or undefined when absent). */
  fromAddress(address: string, forwardedFor: string | undefined): string | undefined;
  /** The key of a logged header value. */
  fromHeader(name: string, value: string | undefined): string | undefined;
}

const NO_HEADERS = Object.freeze({});
/** Address texts whose key is remembered (emptied when full: a log's clients come and go). */
const KEY_CACHE_SIZE = 65_536;

/**
 * The core's `keys.ip()` warnings speak to an adapter's user (`keys.ip({ trustedProxies })`, `validate`,
 * "what the adapter passes"); a replay's user passes `--trusted-proxy` and `--key`: the same warnings, in
 * the CLI's words. A code without its own words here is passed on as the core wrote it.
 */
const CLI_WORDS: Readonly<Record<string, (msg: string) => string>> = {
  WRN_RL_UNTRUSTED_FORWARDED_HEADER: () =>
    "WRN_RL_UNTRUSTED_FORWARDED_HEADER: a logged request carries X-Forwarded-For, but its peer (the field 'peer') is not " +
    "in --trusted-proxy, so the header is ignored and the peer's own address is the key. If the server that wrote the " +
    'log ran behind a proxy or load balancer, pass its addresses (e.g. --trusted-proxy 10.0.0.0/8, or private).',
  WRN_RL_INVALID_REMOTE_ADDRESS: () =>
    'WRN_RL_INVALID_REMOTE_ADDRESS: a logged client address is neither an IP address nor a host name, so its line has no ' +
    'key and counts as malformed. Check --format (or --nginx-fields); to key by something else, pass --key field:<name> ' +
    '(e.g. --key field:remote_addr to take the address text as it is) or --key header:<name>.',
  WRN_RL_PERMISSIVE_TRUSTED_PROXIES: (msg) =>
    msg
      .replace('keys.ip({ trustedProxies }) contains', '--trusted-proxy names')
      .replace(
        "List only your proxies' addresses or ranges.",
        'Pass only the addresses or ranges of the proxies in front of the server that wrote the log.',
      ),
  WRN_RL_MALFORMED_FORWARDED_HEADER: (msg) =>
    msg.replace('If your proxies write such entries', 'If the proxies in --trusted-proxy wrote such entries'),
};

function inCliWords(logger: Logger): Logger {
  return {
    error: (obj, msg) => logger.error(obj, msg),
    warn(obj, msg) {
      const code = (obj as { code?: unknown } | undefined)?.code;
      const words = typeof code === 'string' && Object.hasOwn(CLI_WORDS, code) ? CLI_WORDS[code] : undefined;
      logger.warn(obj, words === undefined ? msg : words(msg ?? ''));
    },
  };
}

/**
 * A DNS name with at least one dot whose last label has a letter (`unicomp6.unicomp.net`), as Apache's
 * `%h` logs a client with `HostnameLookups On`: no IP address reads as one, nor does `not-an-ip`.
 */
const HOST_NAME = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9-]*[a-z][a-z0-9-]*[a-z0-9]?$/i;

/** Runs `build`; a RateLimitConfigError about `keys.ip.trustedProxies[i]` says `--trusted-proxy` instead, the flag the user passed. */
function inCliTerms<T>(build: () => T): T {
  try {
    return build();
  } catch (error) {
    if (error instanceof RateLimitConfigError && error.option.startsWith('keys.ip.trustedProxies')) {
      error.message = error.message.replace(/'keys\.ip\.trustedProxies\[(\d+)\]'/, (_, i: string) => `--trusted-proxy #${Number(i) + 1}`);
    }
    throw error;
  }
}

export function createKeyer(options: KeyerOptions): Keyer {
  const logger = inCliWords(options.logger);
  const diagnostics = createDiagnostics(logger);
  const ip = inCliTerms(() => keys.ip({ ...options.ip, logger }));
  const headerKeys = new Map<string, KeyFunction>();
  const direct = new Map<string, string>();
  function view(remoteAddress: string, headers: RequestView['headers']): RequestView {
    return { remoteAddress, headers, method: 'GET', url: '/', request: undefined, diagnostics };
  }
  let namedHosts = false;
  /** A client logged by host name (Apache `HostnameLookups On`): one client per name, said once. */
  function hostKey(name: string): string {
    if (!namedHosts) {
      namedHosts = true;
      options.logger.warn(
        {},
        'some lines name their client by host name, not IP address (Apache logs %h so with HostnameLookups On): ' +
          "each name is keyed as one client ('host:<name>'), as its address would have been.",
      );
    }
    return `host:${name.toLowerCase()}`;
  }
  function sync(result: string | undefined | Promise<string | undefined>): string | undefined {
    // The built-in key functions answer synchronously; a promise here would be a bug in the core.
    return typeof result === 'string' ? result : undefined;
  }
  return {
    fromAddress(address, forwardedFor) {
      const plain = forwardedFor === undefined || forwardedFor === '-' || forwardedFor === '';
      // Without a forwarding header the key depends on the address text alone: look it up. So does a host
      // name's, which is no trusted proxy: its key is its own, whatever it forwarded.
      const known = direct.get(address);
      if (known !== undefined && (plain || known.startsWith('host:'))) return known;
      const host = HOST_NAME.test(address);
      if (!plain && !host) return sync(ip(undefined, view(ownString(address), { 'x-forwarded-for': forwardedFor })));
      // keys.ip() and this cache keep the text: keep a copy, not a view into the log.
      const own = ownString(address);
      const key = host ? hostKey(own) : sync(ip(undefined, view(own, NO_HEADERS)));
      if (key !== undefined) {
        if (direct.size >= KEY_CACHE_SIZE) direct.clear();
        direct.set(own, key);
      }
      return key;
    },
    fromHeader(name, value) {
      if (value === undefined || value === '-') return undefined;
      let fn = headerKeys.get(name);
      if (fn === undefined) {
        fn = keys.header(name);
        headerKeys.set(name, fn);
      }
      // keys.header() remembers recent values: a copy, not a view into the log.
      // Node's request headers are lower-case: so is the view a key function reads.
      return sync(fn(undefined, view('', { [name.toLowerCase()]: ownString(value) })));
    },
  };
}
