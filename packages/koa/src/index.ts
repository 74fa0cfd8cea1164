export {
  KeyTemplateError,
  LockHttpWarning,
  type LockLogger,
  type LockProblem,
  type LockRefusal,
  type RequestKeyCode,
  RequestKeyError,
  type ValidationName,
} from '@lock/express/http';
export { type KoaLockOptions, type LockState, lock, type RefusalHandler } from './lock.js';
