import { IncomingMessage } from 'node:http';
import { Http2ServerRequest } from 'node:http2';
import { InvalidOptionError } from '@lock/core';

/**
 * What an adapter tells the shared code of its framework, for the messages that show where the
 * middleware goes: an example written for another framework misleads (a Koa app has no `post`).
 */
export interface HttpFramework {
  /** What the examples declare a route on: `'app'` (Express), `'router'` (@koa/router). */
  readonly routes: string;
}

/** Routes declared on `app`, as Express's are (and those of most Node frameworks). */
export const APP_ROUTES: HttpFramework = { routes: 'app' };

/** A route that runs `middleware` before its handler, as the messages show it. */
export function routeWith(framework: HttpFramework, middleware: string): string {
  return `${framework.routes}.post('/orders/:id', ${middleware}, handler)`;
}

/** What the refusal of a factory handed to a route uncalled says of it, by the factory's name. */
const UNCALLED = {
  lock: {
    calledAs: 'a middleware',
    returns: 'lock(options) returns the middleware',
    route: (framework: HttpFramework) => routeWith(framework, "lock({ locker, key: 'order:{params.id}' })"),
  },
  locked: {
    calledAs: 'a route handler',
    returns: 'locked(options, route) returns the handler',
    route: (framework: HttpFramework) =>
      `${framework.routes}.post('/orders/:id', locked({ locker, key: 'order:{params.id}' }, handler))`,
  },
};

/**
 * Refuses a request passed as the options: `lock` (or Express's `locked`) itself handed to a
 * route (`app.post(path, lock, handler)`) is called by the framework with the request (Express
 * `req`, or Koa `ctx`, which holds it as `req`), whose first field would be refused as an unknown
 * option (`"_events"`, `"request"`), saying nothing of the mistake. Told by the request, not by
 * the number of arguments: `optionsList.map(lock)` gives `lock` three. The request is neither
 * shown nor kept, as its headers may hold credentials. Thrown from within the framework's call,
 * it goes to the app's error handling as the request's error, before any lock.
 */
export function refuseRequestAsOptions(
  options: unknown,
  framework: HttpFramework,
  factory: keyof typeof UNCALLED = 'lock',
): void {
  if (!isNodeRequest(options) && !isNodeRequest((options as { req?: unknown } | null | undefined)?.req)) {
    return;
  }
  const { calledAs, returns, route } = UNCALLED[factory];
  throw new InvalidOptionError(
    'options',
    undefined,
    `the ${factory}() options`,
    `${factory}() was called as ${calledAs}, with a request for its options: ${returns}, so pass the route what it returns, not ${factory} itself: ${route(framework)}`,
  );
}

function isNodeRequest(value: unknown): boolean {
  return value instanceof IncomingMessage || value instanceof Http2ServerRequest;
}
