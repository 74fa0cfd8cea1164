export {
  KeyTemplateError,
  LockHttpWarning,
  type LockLogger,
  type LockProblem,
  type LockRefusal,
  type RequestKeyCode,
  RequestKeyError,
  type ValidationName,
} from './http/index.js';
export { type ExpressLockOptions, lock, locked, type RefusalHandler } from './lock.js';
