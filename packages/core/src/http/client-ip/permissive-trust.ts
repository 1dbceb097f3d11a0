/**
 * @module Is a framework's trust-proxy setting spoofable? Each framework resolves the client IP from
 * the socket peer and X-Forwarded-For through its own setting (`true`, a hop count, CIDRs, a function).
 * Rather than parse every spelling, these helpers ask the setting itself: given a chain of arbitrary
 * public addresses, how many hops deep does it believe? Four or more (`true`, `() => true`, a hop count
 * above 3, a CIDR as wide as half the address space) lets a client pick its IP by writing the header.
 */

/** Hops of arbitrary public addresses a setting may trust before it counts as permissive. */
export const PERMISSIVE_TRUST_DEPTH = 4;

/**
 * Chains of public addresses from unrelated networks, the socket peer first. One per half of the IPv4
 * space and one IPv6, so a CIDR that covers half of either is caught, and a real proxy range is not.
 */
const PROBE_CHAINS: readonly (readonly string[])[] = [
  ['11.1.2.3', '23.4.5.6', '45.7.8.9', '67.10.11.12', '89.13.14.15', '101.16.17.18'],
  ['131.1.2.3', '151.4.5.6', '171.7.8.9', '181.10.11.12', '191.13.14.15', '211.16.17.18'],
  ['2001:4860::1', '2400:cb00::2', '2600:1f00::3', '2800:3f0::4', '2a00:1450::5', '2c0f:fb50::6'],
];

/**
 * How the framework resolves the client IP: `remote` is the socket peer, `forwardedFor` the
 * X-Forwarded-For value (left-most entry written first); returns the address it would call the client.
 */
export type ClientIpResolver = (remote: string, forwardedFor: string) => string | undefined;

/** True when `resolve` believes `PERMISSIVE_TRUST_DEPTH` or more hops of some probe chain. */
export function isPermissiveTrust(resolve: ClientIpResolver): boolean {
  for (const chain of PROBE_CHAINS) {
    const [remote, ...hops] = chain as [string, ...string[]];
    let ip: string | undefined;
    try {
      ip = resolve(remote, [...hops].reverse().join(', '));
    } catch {
      continue;
    }
    if (ip !== undefined && chain.indexOf(ip) >= PERMISSIVE_TRUST_DEPTH) return true;
  }
  return false;
}

/**
 * The proxy-addr walk (Express's compiled `'trust proxy fn'`, `(address, hop) => boolean`): from the
 * socket peer towards the left, while the current hop is trusted, the next one is the client.
 */
export function isPermissiveTrustFunction(trust: unknown): boolean {
  if (typeof trust !== 'function') return false;
  const known = probed.get(trust);
  if (known !== undefined) return known;
  const fn = trust as (address: string, hop: number) => unknown;
  const permissive = isPermissiveTrust((remote, forwardedFor) => {
    const addrs = [
      remote,
      ...forwardedFor
        .split(',')
        .map((a) => a.trim())
        .reverse(),
    ];
    let i = 0;
    while (i < addrs.length - 1 && fn(addrs[i] as string, i)) i += 1;
    return addrs[i];
  });
  probed.set(trust, permissive);
  return permissive;
}

/** Answers by trust function: Express asks on every request, with the same compiled function. */
const probed = new WeakMap<object, boolean>();
