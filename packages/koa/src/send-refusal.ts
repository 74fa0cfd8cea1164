import { cutResponse, type LockRefusal, PROBLEM_CONTENT_TYPE } from '@lock/express/http';
import type { Context } from 'koa';
import type { RefusalHandler } from './lock.js';

/**
 * The default answer to a refused request: the refusal's status, `Retry-After` in seconds and
 * its problem+json body. Set on the context rather than thrown, so no error handler upstream can
 * drop the header. A response whose headers are already sent gets nothing: `refuse` cuts it.
 */
export function sendRefusal(ctx: Context, refusal: LockRefusal): void {
  if (ctx.headerSent) return;
  ctx.status = refusal.statusCode;
  ctx.set('Retry-After', String(refusal.retryAfter));
  ctx.type = PROBLEM_CONTENT_TYPE;
  ctx.body = JSON.stringify(refusal.problem);
}

/**
 * Answers a refusal with `handler`. When an earlier middleware already sent the headers, Koa
 * ignores the status and headers the handler sets but still writes its body, ending a response
 * that passes for the earlier status; a thrown error would not help either, as Koa leaves a
 * response whose headers are sent open. So such a response is cut once the handler is done
 * (returned or threw), as Koa 3 cuts a streamed body that fails at this point, unless the handler
 * took the response over (`ctx.respond = false`, or ended `ctx.res` itself).
 */
export async function refuse(ctx: Context, handler: RefusalHandler, refusal: LockRefusal): Promise<void> {
  const sent = ctx.headerSent;
  try {
    await handler(ctx, refusal);
  } finally {
    if (sent) cutUnlessTakenOver(ctx);
  }
}

/**
 * Cuts a response whose status can no longer be told, unless the app took it over
 * (`ctx.respond = false`) or it has ended.
 */
export function cutUnlessTakenOver(ctx: Context): void {
  if (ctx.respond !== false && !ctx.res.writableEnded) cutResponse(ctx.res);
}
