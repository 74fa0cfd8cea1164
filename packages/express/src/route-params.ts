import type { Request } from 'express';

/**
 * A param of a path-to-regexp 8 path (Express 5): `:name` or `*name`, the name an identifier or
 * double-quoted. A backslash escapes the character after it, so `\:` is text; the first branch
 * consumes it.
 */
const PARAM = /\\.|[:*](?:"((?:\\.|[^"\\])*)"|([$_\p{ID_Start}](?:[$\p{ID_Continue}]|\u200c|\u200d)*))/gsu;

/** Paths come from the app's code, a fixed set: each is parsed once. */
const parsed = new Map<string, readonly string[]>();

/** The names of the params a path-to-regexp 8 route path (or an array of them, as Express takes) declares. */
export function pathParams(path: unknown): readonly string[] {
  if (Array.isArray(path)) return path.flatMap(pathParams);
  if (typeof path !== 'string') return [];
  let names = parsed.get(path);
  if (names === undefined) {
    names = [...path.matchAll(PARAM)].flatMap(([, quoted, name]) =>
      quoted !== undefined ? [quoted.replace(/\\(.)/gsu, '$1')] : name !== undefined ? [name] : [],
    );
    parsed.set(path, names);
  }
  return names;
}

/**
 * What `req.route` is, as Express 4 (its own router) and Express 5 (the `router` package, 2.x)
 * both build it. `stack` and `_handlesMethod` are internal: covered by the tests of both versions.
 */
interface Route {
  readonly path?: unknown;
  readonly stack?: readonly { readonly handle?: unknown }[];
  readonly _handlesMethod?: unknown;
}

/**
 * The params the route running `middleware` declares that Express may leave off `req.params`.
 * Express sets `req.route` when a route matches and leaves it there for the layers after it (a
 * route that called `next()`, then `app.use`): it is this request's route only when `middleware`
 * is one of its handlers. Express 5 leaves an optional param the request left out
 * (`/orders{/:id}`) off `req.params`, so its path is read. Express 4 keeps every param its path
 * declares on `req.params`, `undefined` when left out, and its paths are path-to-regexp 0.1, which
 * the parser above misreads (`/files/*name` declares no `name`): its routes give none. Its Route
 * has `_handles_method` where router 2's has `_handlesMethod`; checking the route rather than the
 * app also reads right a router of one major mounted in an app of the other.
 */
export function declaredParams(req: Request, middleware: unknown): readonly string[] {
  const route = req.route as Route | undefined;
  if (typeof route?._handlesMethod !== 'function') return [];
  if (!route.stack?.some((layer) => layer.handle === middleware)) return [];
  return pathParams(route.path);
}
