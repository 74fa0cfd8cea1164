export { FAIR_WAIT_ALLOWANCE, FairLockProtocol, type FairLockProtocolOptions } from './fair/protocol.js';
export { FencedLockProtocol } from './fenced/protocol.js';
export { HashLockProtocol, WATCHDOG_TIMEOUT } from './hash-protocol.js';
export type { LockKind, RedissonProtocol } from './kinds.js';
export { RLockProtocol, UNLOCK_MESSAGE } from './lock/protocol.js';
export {
  type LockOptions,
  RFairLock,
  RFencedLock,
  RLock,
  RReadWriteLock,
  type TryLockOptions,
} from './locks.js';
export { prefixName, suffixName, validateName } from './names.js';
export type { RedissonOptions } from './options.js';
export { createRedisson, type Redisson } from './redisson.js';
export {
  READ_UNLOCK_MESSAGE,
  ReadLockProtocol,
  WRITE_UNLOCK_MESSAGE,
  WriteLockProtocol,
  writerField,
} from './rwlock/protocol.js';
export { NoThreadError, type ThreadOptions } from './thread.js';
