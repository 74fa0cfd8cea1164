import { type LockRefusal, PROBLEM_CONTENT_TYPE } from '@lock/express/http';
import type { Context } from 'koa';

/**
 * The default answer to a refused request: the refusal's status, `Retry-After` in seconds and
 * its problem+json body, or, when the headers are already sent, a cut connection. Set on the
 * context rather than thrown, so no error handler upstream can drop the header.
 */
export function sendRefusal(ctx: Context, refusal: LockRefusal): void {
  // An earlier middleware already sent a status: Koa ignores the status and headers set now but
  // would still write the body, ending a response that passes for that status. A thrown error
  // would not help either: Koa leaves a response whose headers are sent open. Cut it, as Koa 3
  // does when a streamed body fails at this point.
  if (ctx.headerSent) {
    ctx.res.destroy();
    return;
  }
  ctx.status = refusal.statusCode;
  ctx.set('Retry-After', String(refusal.retryAfter));
  ctx.type = PROBLEM_CONTENT_TYPE;
  ctx.body = JSON.stringify(refusal.problem);
}
