/**
 * @module The route template of a request (the metrics' `route` label, `http.route`): the mount paths of
 * the apps and routers the route is mounted under, then the route's own path, as written
 * (`/tenants/:tenant/items/:id`). Express gives the route's path (`req.route.path`) but only the *matched*
 * mount path (`req.baseUrl`, `/tenants/acme`), whose values would make a label per tenant; so the mount
 * paths are read from the router layers that lead to the route, found once per route. Express 5's layers
 * keep the path they were given; Express 4's keep only its regular expression, so their parameters are
 * put back from it (`:name` in place of each value) for each request.
 */
import type { Request } from 'express';

/** A router layer, as Express 4 (`regexp`, `keys`) and Express 5 (`rawPath`) build them. */
interface Layer {
  readonly route?: object;
  readonly handle?: { readonly stack?: readonly Layer[] };
  /** Express 5: the path the layer was mounted at, as written. */
  readonly rawPath?: unknown;
  /** Express 4: the mount path's expression and its parameters. */
  readonly regexp?: RegExp & { fast_slash?: boolean };
  readonly keys?: readonly { readonly name: string | number }[];
}

/** How a route's mount path is written: known once (Express 5), or read from the matched path per request (Express 4). */
type Mounts = string | readonly Layer[];

/** Per route object: its mounts, found at its first request; `null` when its layers were not found. */
const found = new WeakMap<object, Mounts | null>();

/** Express 4 layers' expressions, with indices of the groups (`d`), made once per layer. */
const withIndices = new WeakMap<RegExp, RegExp>();

/** The layers from `stack` down to the one of `route` (the route's own excluded); undefined when not there. */
function layersTo(stack: readonly Layer[], route: object, depth: number): Layer[] | undefined {
  for (const layer of stack) {
    if (layer.route === route) return [];
    const inner = layer.handle?.stack;
    if (layer.route !== undefined || !Array.isArray(inner) || depth > 16) continue;
    const below = layersTo(inner, route, depth + 1);
    if (below !== undefined) return [layer, ...below];
  }
  return undefined;
}

function mountsOf(req: Request, route: object): Mounts | null {
  const app = req.app as unknown as { router?: { stack?: Layer[] }; _router?: { stack?: Layer[] }; path?: () => string };
  const stack = (app._router ?? app.router)?.stack;
  const layers = Array.isArray(stack) ? layersTo(stack, route, 0) : undefined;
  if (layers === undefined) return null;
  // A sub-app's own mount path, written (app.path(): its parents' and its own).
  const appPath = typeof app.path === 'function' ? app.path() : '';
  if (layers.every((l) => l.rawPath !== undefined)) {
    return appPath + layers.map((l) => (l.rawPath === '/' ? '' : String(l.rawPath))).join('');
  }
  return layers;
}

/** The part of `path` the Express 4 `layer` matched, its parameters as `:name`; undefined when it does not match. */
function express4Part(layer: Layer, path: string): { written: string; matched: number } | undefined {
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
  let written = '';
  let at = 0;
  const keys = layer.keys ?? [];
  for (let i = 1; i < m.length; i++) {
    const span = m.indices?.[i];
    if (span === undefined) continue;
    written += `${literal(path.slice(at, span[0]))}:${keys[i - 1]?.name ?? i - 1}`;
    at = span[1];
  }
  // A trailing slash the expression allows is not part of the mount path.
  const end = m[0].endsWith('/') && m[0].length > 1 ? m[0].length - 1 : m[0].length;
  return { written: written + literal(path.slice(at, end)), matched: end };
}

/**
 * The mount path of `layers` for the request's matched path (Express 4); undefined when they do not
 * match it. In a sub-app, `req.baseUrl` starts with the sub-app's matched mount, not kept apart: its
 * mount path is taken as written, so one with parameters is not read (undefined).
 */
function express4Mounts(req: Request, layers: readonly Layer[]): string | undefined {
  const app = req.app as unknown as { parent?: unknown; mountpath?: unknown; path?: () => string };
  let rest = req.baseUrl;
  let out = '';
  if (app.parent !== undefined) {
    const mount = app.mountpath;
    if (typeof mount !== 'string' || mount.includes(':') || typeof app.path !== 'function') return undefined;
    const own = mount === '/' ? '' : mount;
    if (rest.slice(0, own.length).toLowerCase() !== own.toLowerCase()) return undefined;
    out = app.path();
    rest = rest.slice(own.length);
  }
  for (const layer of layers) {
    const part = express4Part(layer, rest);
    if (part === undefined) return undefined;
    out += part.written;
    rest = rest.slice(part.matched);
  }
  return out;
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
  const written = mounts === null ? undefined : express4Mounts(req, mounts);
  // Not found (a route reached in a way the walk does not know): the route's own path, never a value.
  return written === undefined ? path : written + path;
}
