/**
 * @module The route template of a request (the metrics' `route` label, `http.route`): the mount paths of
 * the apps and routers the route is mounted under, then the route's own path, as written
 * (`/tenants/:tenant/items/:id`). Express gives the route's path (`req.route.path`) but only the *matched*
 * mount path (`req.baseUrl`, `/tenants/acme`), whose values would make a label per tenant; so the mount
 * paths are read from the router layers that lead to the route, found once per route. A router reached
 * one way whose mounts are plain strings (Express 5 keeps the path a layer was given) is written once;
 * otherwise (a router mounted in several places, a mount of several paths or a RegExp, a sub-app, Express
 * 4, whose layers keep only a regular expression) each request's matched path picks the way it came and
 * the path of each mount, parameters put back as `:name`, a RegExp mount written as its source. Where
 * nothing matches, the label is the route's own path: never a value from the URL.
 */
import type { Request } from 'express';

/** A router layer, as Express 4 (`regexp`, `keys`) and Express 5 (`rawPath`, `matchers`) build them. */
interface Layer {
  readonly route?: object;
  readonly handle?: { readonly stack?: readonly Layer[] };
  /** Express 5: the path the layer was mounted at, as written (an array when several; a RegExp when one). */
  readonly rawPath?: unknown;
  /** Express 5: one matcher per path of `rawPath` (path-to-regexp's `match`, pure). */
  readonly matchers?: readonly ((path: string) => { readonly path: string } | false)[];
  /** Express 5: the layer is `use('/')`, which matches any path and consumes nothing. */
  readonly slash?: boolean;
  /** Express 4: the mount path's expression and its parameters. */
  readonly regexp?: RegExp & { fast_slash?: boolean };
  readonly keys?: readonly { readonly name: string | number }[];
}

/** A sub-app, as Express 4 and 5 link it to the app it is mounted in. */
interface App {
  readonly parent?: App;
  readonly mountpath?: unknown;
  readonly router?: { readonly stack?: readonly Layer[] };
  readonly _router?: { readonly stack?: readonly Layer[] };
}

/** The part of a matched path one layer accounts for: as written, and how many characters of it. */
interface Part {
  readonly written: string;
  readonly matched: number;
}

/**
 * How a route's mount paths are written: known once (one way to the route, every mount path written
 * as one string, Express 5), or, per request, the first of the ways to the route (the chains of layers,
 * in routing order) whose mount paths match the request's matched path (`req.baseUrl`).
 */
type Mounts = string | readonly (readonly Layer[])[];

/** Per route object: its mounts, found at its first request; `null` when its layers were not found. */
const found = new WeakMap<object, Mounts | null>();

/** Express 4 layers' expressions, with indices of the groups (`d`), made once per layer. */
const withIndices = new WeakMap<RegExp, RegExp>();

/** At most this many routers deep, and this many ways to one route, are followed. */
const MAX_DEPTH = 16;
const MAX_CHAINS = 32;

function stackOf(app: App | undefined): readonly Layer[] | undefined {
  const stack = (app?._router ?? app?.router)?.stack;
  return Array.isArray(stack) ? stack : undefined;
}

/** Every chain of layers from `stack` down to the one of `route` (the route's own excluded), in routing order. */
function chainsTo(stack: readonly Layer[], route: object, depth: number, out: Layer[][], above: readonly Layer[]): void {
  for (const layer of stack) {
    if (out.length >= MAX_CHAINS) return;
    if (layer.route === route) out.push([...above]);
    const inner = layer.handle?.stack;
    if (layer.route !== undefined || !Array.isArray(inner) || depth >= MAX_DEPTH) continue;
    chainsTo(inner, route, depth + 1, out, [...above, layer]);
  }
}

/** A mount path as a label writes it: a string without its trailing slashes (`'/'` is nothing), a RegExp as its source. */
function written(path: unknown): string {
  return typeof path === 'string' ? path.replace(/\/+$/, '') : String(path);
}

function mountsOf(req: Request, route: object): Mounts | null {
  const app = req.app as unknown as App;
  const stack = stackOf(app);
  const chains: Layer[][] = [];
  if (stack !== undefined) chainsTo(stack, route, 0, chains, []);
  if (chains.length === 0) return null;
  const only = chains[0] as Layer[];
  const appPath = chains.length === 1 && only.every((l) => typeof l.rawPath === 'string') ? writtenAppPath(app) : undefined;
  return appPath === undefined ? chains : appPath + only.map((l) => written(l.rawPath)).join('');
}

/** The mount paths of `app` and the apps above it, when each is one string; undefined otherwise. */
function writtenAppPath(app: App): string | undefined {
  let out = '';
  for (let a: App | undefined = app, depth = 0; a?.parent !== undefined; a = a.parent, depth++) {
    if (typeof a.mountpath !== 'string' || depth >= MAX_DEPTH) return undefined;
    out = written(a.mountpath) + out;
  }
  return out;
}

/** The part of `path` an Express 5 `layer` matched, its path as written; undefined when it does not match. */
function express5Part(layer: Layer, path: string): Part | undefined {
  if (layer.slash === true) return { written: '', matched: 0 };
  const matchers = layer.matchers ?? [];
  for (let i = 0; i < matchers.length; i++) {
    const m = (matchers[i] as (path: string) => { readonly path: string } | false)(path);
    if (m === false) continue;
    const raw = Array.isArray(layer.rawPath) ? layer.rawPath[i] : layer.rawPath;
    return { written: written(raw), matched: m.path.length };
  }
  return undefined;
}

/**
 * The part of `path` the Express 4 `layer` matched, its parameters as `:name`; undefined when it does not
 * match. A layer mounted on a RegExp is written as its source: its text is not the URL's.
 */
function express4Part(layer: Layer, path: string): Part | undefined {
  const regexp = layer.regexp;
  if (regexp === undefined) return undefined;
  if (regexp.fast_slash === true) return { written: '', matched: 0 };
  let indexed = withIndices.get(regexp);
  if (indexed === undefined) {
    indexed = new RegExp(regexp.source, `${regexp.flags}d`);
    withIndices.set(regexp, indexed);
  }
  const m = indexed.exec(path);
  if (m === null || m.index !== 0) return undefined;
  // The literal text as the URL spelt it: in lower case when any case matches (Express' default), so
  // that '/TENANTS' and '/tenants' are one label.
  const literal = regexp.flags.includes('i') ? (text: string) => text.toLowerCase() : (text: string) => text;
  let out = '';
  let at = 0;
  const keys = layer.keys ?? [];
  for (let i = 1; i < m.length; i++) {
    const span = m.indices?.[i];
    if (span === undefined) continue;
    out += `${literal(path.slice(at, span[0]))}:${keys[i - 1]?.name ?? i - 1}`;
    at = span[1];
  }
  // A trailing slash the expression allows is not part of the mount path.
  const end = m[0].endsWith('/') && m[0].length > 1 ? m[0].length - 1 : m[0].length;
  out += literal(path.slice(at, end));
  return writtenIn(regexp, out) ? { written: out, matched: end } : { written: String(regexp), matched: end };
}

/** True when every literal segment of `text` (not a `:name`) is written in `regexp` as path-to-regexp 0.1 escapes it. */
function writtenIn(regexp: RegExp, text: string): boolean {
  const source = regexp.flags.includes('i') ? regexp.source.toLowerCase() : regexp.source;
  return text.split('/').every((segment) => segment === '' || segment.startsWith(':') || source.includes(segment.replace(/\./g, '\\.')));
}

/** The part of `path` `layer` matched, as written (Express 5 or 4). */
function partOf(layer: Layer, path: string): Part | undefined {
  return layer.matchers !== undefined ? express5Part(layer, path) : express4Part(layer, path);
}

/**
 * The mount paths above the routers of `app` for the matched path `baseUrl`: the sub-apps' as written,
 * and what of `baseUrl` is left for the app's own routers. A sub-app's mount is matched with a layer of
 * its parent mounted on the same path: Express 5's by the path it keeps, Express 4's by the path its
 * expression gives back (its layers do not say which app they mount; any on that path matches alike).
 */
function appPrefix(app: App, baseUrl: string, depth: number): { written: string; rest: string } | undefined {
  const parent = app.parent;
  if (parent === undefined || depth >= MAX_DEPTH) return parent === undefined ? { written: '', rest: baseUrl } : undefined;
  const up = appPrefix(parent, baseUrl, depth + 1);
  if (up === undefined) return undefined;
  const mount = [app.mountpath].flat(Number.POSITIVE_INFINITY);
  const own = typeof mount[0] === 'string' && mount.length === 1 ? written(mount[0]).toLowerCase() : undefined;
  for (const layer of stackOf(parent) ?? []) {
    let part: Part | undefined;
    if (layer.matchers !== undefined) part = sameMount(layer.rawPath, mount) ? express5Part(layer, up.rest) : undefined;
    else if (own !== undefined) part = express4Part(layer, up.rest);
    if (part !== undefined && (layer.matchers !== undefined || part.written.toLowerCase() === own))
      return { written: up.written + part.written, rest: up.rest.slice(part.matched) };
  }
  return undefined;
}

function sameMount(raw: unknown, mount: readonly unknown[]): boolean {
  const paths = Array.isArray(raw) ? raw : [raw];
  return paths.length === mount.length && paths.every((p, i) => p === mount[i]);
}

/** The mount paths of `chain` for what is left of the matched path (`rest`) after `written`; undefined when its layers do not match it. */
function chainWritten(chain: readonly Layer[], written: string, rest: string): string | undefined {
  let out = written;
  let left = rest;
  for (const layer of chain) {
    const part = partOf(layer, left);
    if (part === undefined) return undefined;
    out += part.written;
    left = left.slice(part.matched);
  }
  return left === '' || left === '/' ? out : undefined;
}

/** The mount paths of the first of `chains` whose layers match the request's matched path; undefined when none does. */
function mountsFor(req: Request, chains: readonly (readonly Layer[])[]): string | undefined {
  const prefix = appPrefix(req.app as unknown as App, req.baseUrl, 0);
  if (prefix === undefined) return undefined;
  for (const chain of chains) {
    const out = chainWritten(chain, prefix.written, prefix.rest);
    if (out !== undefined) return out;
  }
  return undefined;
}

/** The route template of `req` inside a route (mount paths + the route's path); never the raw URL; undefined outside a route. */
export function routeTemplateOf(req: Request): string | undefined {
  const route = req.route as { path?: unknown } | undefined;
  const path = route?.path;
  if (typeof path !== 'string' || route === undefined) return undefined;
  if (req.baseUrl === '') return path;
  let mounts = found.get(route);
  if (mounts === undefined) {
    mounts = mountsOf(req, route);
    found.set(route, mounts);
  }
  if (typeof mounts === 'string') return mounts + path;
  const mounted = mounts === null ? undefined : mountsFor(req, mounts);
  // Not found (a route reached in a way the walk does not know): the route's own path, never a value.
  return mounted === undefined ? path : mounted + path;
}
