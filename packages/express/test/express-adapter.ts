import http from 'node:http';
import { Readable } from 'node:stream';
import type express from 'express';
import express5, { type ErrorRequestHandler, type RequestHandler, type Response } from 'express';
import express4 from 'express4';
import { type ExpressLockOptions, lock } from '../src/index.js';
import { listen } from './support/http.js';
import type { HttpLockAdapter, TestRoute } from './support/lock-suite.js';

/** One Express major version, as the shared suite drives it. */
export interface ExpressVersion {
  readonly name: string;
  readonly express: typeof express;
  /** Express 5 sends a rejected async handler to `next(err)`; Express 4 needs the handler to do it. */
  readonly forwardsRejections: boolean;
  /** `/orders` with an optional `id` param: path-to-regexp 8 syntax on Express 5, 0.1 on Express 4. */
  readonly optionalIdPath: string;
}

export const expressVersions: readonly ExpressVersion[] = [
  { name: 'Express 5', express: express5, forwardsRejections: true, optionalIdPath: '/orders{/:id}' },
  {
    name: 'Express 4',
    express: express4 as unknown as typeof express5,
    forwardsRejections: false,
    optionalIdPath: '/orders/:id?',
  },
];

function send(res: Response, body: unknown): void {
  if (body instanceof Readable) {
    res.type('text/plain');
    body.pipe(res);
  } else {
    res.json(body);
  }
}

function handlerOf(route: TestRoute, forwardsRejections: boolean): RequestHandler {
  return forwardsRejections
    ? async (req, res) => send(res, await route.handle(req.lock))
    : (req, res, next) => {
        route.handle(req.lock).then((body) => send(res, body), next);
      };
}

/** A middleware running `work` with the handle an earlier gate stored, between two gates. */
function betweenGates(work: NonNullable<TestRoute['betweenGates']>): RequestHandler {
  return (req, _res, next) => {
    work(req.lock).then(() => next(), next);
  };
}

/** Answers an error with its status and `{ code }`, as the suite expects. */
export const answerErrors: ErrorRequestHandler = (error, _req, res, _next) => {
  res.status(error.status ?? 500).json({ code: error.code ?? null });
};

export function expressAdapter({
  name,
  express,
  forwardsRejections,
  optionalIdPath,
}: ExpressVersion): HttpLockAdapter {
  return {
    name,
    optionalIdPath,
    lock: (options) => lock(options as unknown as ExpressLockOptions),
    serve(routes) {
      const app = express();
      for (const route of routes) {
        const gates = Array.from({ length: route.gates ?? 1 }, (_, i) => [
          ...(i > 0 && route.betweenGates ? [betweenGates(route.betweenGates)] : []),
          lock(route.options as unknown as ExpressLockOptions),
        ]).flat();
        app.get(route.path, ...gates, handlerOf(route, forwardsRejections));
      }
      app.use(answerErrors);
      return listen(http.createServer(app));
    },
  };
}
