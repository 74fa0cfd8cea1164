export type { BackendExtension, BackendGrant, BackendRefusal, LockBackend } from './backend.js';
export type { EvictionCheck } from './backends/eviction.js';
export { type MessageListener, ReleaseListener } from './backends/release-listener.js';
export { checkReplication } from './backends/replication.js';
export { type SingleBackendOptions, singleBackend } from './backends/single.js';
export { currentChain, newChain, runInChain, runWithChain } from './chain.js';
export { clockDrift } from './clock-drift.js';
export type { ClockSkewOptions } from './clock-skew.js';
export { createLocker, type LockerOptions } from './create-locker.js';
export { bounded, CommandTimeoutError } from './engine/deadline.js';
export { detached } from './engine/detached.js';
export { createEngine, type EngineOptions } from './engine/engine.js';
export {
  type AcquireEvent,
  type AcquireTraceContext,
  acquireTracing,
  channels as lockEvents,
  type ExtendEvent,
  type LockEvent,
  type LockEventName,
  type LostEvent,
  type ReleaseEvent,
  type RenewEvent,
} from './engine/events.js';
export {
  checkFunction,
  checkKey,
  checkMs,
  checkPrefix,
  checkRetry,
  checkTtl,
  checkWait,
  DEFAULT_COMMAND_TIMEOUT,
  DEFAULT_RETRY,
  MAX_KEY_BYTES,
  MAX_TTL,
  MIN_TTL,
  type OptionAlias,
  orDefault,
  refuseUnknown,
} from './engine/options.js';
export {
  AcquireTimeoutError,
  type AcquireTimeoutOptions,
  ClockSkewError,
  InvalidKeyError,
  InvalidOptionError,
  isUnavailable,
  LOCK_ERROR_CODES,
  LockAbortError,
  LockBusyError,
  LockError,
  type LockErrorCode,
  LockerClosedError,
  LockLostError,
  type LockLostReason,
  LockUnavailableError,
  NotOwnerError,
  QuorumError,
  ReplicationError,
  UnsafeServerError,
} from './errors.js';
export { expiryGuardLua } from './expiry-guard.js';
export { fenceCounter } from './fence-counter.js';
export { fencedGet, fencedSet } from './fencing/fenced-set.js';
export { hashTag, keySlot, slotKey } from './hash-tag.js';
export { type KeySegmentProblem, keySegmentText } from './key-segment.js';
export { type KeyTemplatePart, keyTemplateEscaper, keyValueEscaper } from './key-value-escaper.js';
export type {
  AcquireReply,
  AttemptContext,
  HandedGrant,
  Inspection,
  LockProtocol,
  RedisClient,
  ReleaseReply,
  RenewalItem,
} from './protocol.js';
export * from './protocols/legacy/index.js';
export { tokenProtocol } from './protocols/token/token.js';
export {
  checkPubSub,
  forcePubSub,
  type LockerPubSubOption,
  type PubSubMode,
  type PubSubOption,
  pubSubMode,
} from './pub-sub-mode.js';
export * from './redlock/index.js';
export { RETRY_AFTER_UNKNOWN, retryAfterSeconds } from './retry-after.js';
export { LuaScript, UNSENT, WholeScript } from './script.js';
export { isCluster } from './topology.js';
export type {
  AcquireOptions,
  Lock,
  Locker,
  LockInspection,
  ReplicationOptions,
  RetryOptions,
  UsingOptions,
} from './types.js';
export { isWellFormedValue } from './well-formed.js';
