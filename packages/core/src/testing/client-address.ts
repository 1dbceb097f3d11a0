/**
 * @module Test support: the client-address pieces composed the plain way, for tests that exercise the walk
 * through them. `keys.ip()` composes the same pieces with its socket cache in between (ip-key.ts).
 */
import { type ClientAddressConfig, clientBehindProxy, ignoreForwarding, socketAddress } from '../http/client-ip/client-address.js';
import { type ForwardingHeader, HopReader } from '../http/client-ip/forwarded-header.js';
import type { IpAddress } from '../http/client-ip/ip-address.js';
import type { RequestView } from '../http/request-view.js';

/**
 * Resolves the client address of a request. Undefined only when the socket address is missing or not an
 * IP address (warned once). Never throws on header content.
 */
export function resolveClientAddress(view: RequestView, config: ClientAddressConfig): IpAddress | undefined {
  const socket = socketAddress(view);
  if (socket === undefined) return undefined;
  if (config.trustedProxies.has(socket)) return clientBehindProxy(view, config, socket);
  ignoreForwarding(view, config, socket);
  return socket;
}

/**
 * Yields the address text of each hop of `value`, rightmost (nearest) first; `undefined` marks a hop that
 * is not a usable address, after which nothing more is yielded. (`HopReader` as an iterable.)
 */
export function* hopsFromRight(value: string, format: ForwardingHeader): Generator<string | undefined, void, void> {
  const reader = new HopReader(value, format);
  for (let hop = reader.next(); hop !== null; hop = reader.next()) yield hop;
}
