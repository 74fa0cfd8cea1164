/**
 * The framework-neutral parts of the HTTP lock middlewares, shared by @lock/express and
 * @lock/koa: key templates, option checks, the request gate, refusals and their bodies, and the
 * cut of a response whose headers are out. They take node:http's and node:http2's compat objects.
 */
export { type CuttableResponse, cutResponse } from './cut.js';
export { KeyTemplateError, LockHttpWarning, type RequestKeyCode, RequestKeyError } from './errors.js';
export { APP_ROUTES, type HttpFramework, refuseRequestAsOptions } from './framework.js';
export { createGate, type Gate, type GateOutcome, type Proceed } from './gate.js';
export type { KeySource, KeySources } from './key-template.js';
export {
  type CommonLockOptions,
  checkCommonOptions,
  checkFunction,
  checkPropertyName,
  type LockLogger,
  type ValidationName,
} from './options.js';
export { type LockProblem, type LockRefusal, PROBLEM_CONTENT_TYPE } from './refusal.js';
export type { ClosableConnection, ClosableRequest, ClosableResponse } from './response-lock.js';
