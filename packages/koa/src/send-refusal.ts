import { type LockRefusal, PROBLEM_CONTENT_TYPE } from '@lock/express/http';
import type { Context } from 'koa';

/**
 * The default answer to a refused request: the refusal's status, `Retry-After` in seconds and
 * its problem+json body. Set on the context rather than thrown, so no error handler upstream
 * can drop the header.
 */
export function sendRefusal(ctx: Context, refusal: LockRefusal): void {
  ctx.status = refusal.statusCode;
  ctx.set('Retry-After', String(refusal.retryAfter));
  ctx.type = PROBLEM_CONTENT_TYPE;
  ctx.body = JSON.stringify(refusal.problem);
}
