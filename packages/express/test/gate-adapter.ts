import type { Http2ServerResponse } from 'node:http2';
import type { Request, Response } from 'express';
import { type CommonLockOptions, checkCommonOptions, createGate } from '../src/http/index.js';
import { sendRefusal } from '../src/send-refusal.js';
import type { H2LockAdapter } from './support/h2-suite.js';

/** What the test routes' keys read: the route params. */
interface RouteContext {
  readonly params: Readonly<Record<string, string>>;
}

/** The params of `path` when it matches `pattern` (`/orders/:id`). */
function match(pattern: string, path: string): Record<string, string> | undefined {
  const want = pattern.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (const [at, part] of want.entries()) {
    if (part.startsWith(':')) params[part.slice(1)] = decodeURIComponent(got[at]!);
    else if (part !== got[at]) return undefined;
  }
  return params;
}

function answer(res: Http2ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify(body));
}

function answerError(res: Http2ServerResponse, error: unknown): void {
  const { status, code } = error as { status?: number; code?: string };
  answer(res, status ?? 500, { code: code ?? null });
}

/**
 * `@lock/express/http` with no framework, on node:http2's compat objects: what an adapter built on
 * the shared layer does, and Express's default refusal answer, which needs only Node's response API.
 */
export const gateAdapter: H2LockAdapter = {
  name: 'The shared HTTP layer',
  listener(routes) {
    const served = routes.map((route) => ({
      route,
      gate: createGate(
        checkCommonOptions<RouteContext>(route.options as unknown as CommonLockOptions<RouteContext>, []),
        (context: RouteContext) => ({ params: context.params }),
      ),
    }));
    return async (req, res) => {
      const path = req.url.split('?')[0]!;
      const found = served.find(({ route }) => match(route.path, path));
      if (found === undefined) return answer(res, 404, { code: null });
      // Missing from @types/node, but node:http2's compat response has it, as node:http's does.
      if (found.route.flushHeaders) (res as unknown as { flushHeaders(): void }).flushHeaders();
      let work: Promise<void> | undefined;
      try {
        const outcome = await found.gate(
          { params: match(found.route.path, path)! },
          res,
          (held) => {
            work = found.route.handle(held).then(
              (body) => answer(res, 200, body),
              (error: unknown) => answerError(res, error),
            );
            return work;
          },
          req,
        );
        if (outcome.kind === 'refused') {
          sendRefusal(req as unknown as Request, res as unknown as Response, () => {}, outcome.refusal);
        }
      } catch (error) {
        answerError(res, error);
      }
      await work;
    };
  },
};
