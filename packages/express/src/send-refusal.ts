import type { NextFunction, Request, Response } from 'express';
import { cutResponse, type LockRefusal, PROBLEM_CONTENT_TYPE } from './http/index.js';

/**
 * The default answer to a refused request: the refusal's status, `Retry-After` in seconds and
 * its problem+json body, or, when the headers are already sent, a cut connection. Written with
 * Node's own response API, which Express 4 and 5 share.
 */
export function sendRefusal(_req: Request, res: Response, _next: NextFunction, refusal: LockRefusal): void {
  // An earlier middleware already sent a status: a refusal can no longer be told, and ending the
  // response would pass for that status. Cut it, as Express does with an error at this point.
  if (res.headersSent) {
    cutResponse(res);
    return;
  }
  const body = JSON.stringify(refusal.problem);
  res.statusCode = refusal.statusCode;
  res.setHeader('Retry-After', String(refusal.retryAfter));
  res.setHeader('Content-Type', PROBLEM_CONTENT_TYPE);
  res.setHeader('Content-Length', Buffer.byteLength(body));
  res.end(body);
}
