export type { BackendGrant, BackendRefusal, LockBackend } from './backend.js';
export { currentChain, newChain, runInChain, runWithChain } from './chain.js';
export {
  AcquireTimeoutError,
  InvalidKeyError,
  InvalidOptionError,
  LockAbortError,
  LockBusyError,
  LockError,
  LockerClosedError,
  LockLostError,
  type LockLostReason,
  NotOwnerError,
  QuorumError,
  ReplicationError,
} from './errors.js';
export type {
  AcquireReply,
  Inspection,
  LockProtocol,
  RedisClient,
  ReleaseReply,
  RenewalItem,
} from './protocol.js';
export { LuaScript } from './script.js';
export type {
  AcquireOptions,
  Lock,
  LockInspection,
  Locker,
  ReplicationOptions,
  RetryOptions,
} from './types.js';
