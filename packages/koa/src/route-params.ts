import type { Context } from 'koa';

/** What @koa/router puts on the context: the path of the layer running and the layers that matched. */
interface RouterContext {
  readonly routerPath?: unknown;
  readonly matched?: readonly {
    readonly path?: unknown;
    readonly stack?: readonly unknown[];
    readonly paramNames?: readonly { name: unknown }[];
  }[];
}

/**
 * The params the route running `middleware` declares: @koa/router leaves an optional param the
 * request left out (`/orders{/:id}`) off `ctx.params`, though the route's layer names it. It also
 * leaves `ctx.routerPath` and `ctx.matched` set for the middleware after the router (a route that
 * called `next()`, then `app.use`): a layer is this request's route only when `middleware` is in
 * its stack.
 */
export function declaredParams(ctx: Context, middleware: unknown): readonly string[] {
  const { routerPath, matched = [] } = ctx as RouterContext;
  return matched
    .filter((layer) => layer.path === routerPath && layer.stack?.includes(middleware))
    .flatMap((layer) => layer.paramNames ?? [])
    .flatMap(({ name }) => (typeof name === 'string' ? [name] : []));
}
