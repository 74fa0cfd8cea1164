export { type AclLogin, type AclUserOptions, aclUser } from './acl-user.js';
export { RedisServerNotFoundError, redisServerBinary } from './binary.js';
export {
  type ClusterFailover,
  type ClusterFailoverOptions,
  type ClusterShard,
  type RedisCluster,
  type SlotRange,
  type StartClusterOptions,
  startCluster,
} from './cluster.js';
export { connectedAgainOnEnd } from './connected-again.js';
export {
  type AssertHistoryOptions,
  assertHistory,
  HistoryViolationError,
  summary as historySummary,
  writeFailingHistory,
} from './history/assert.js';
export {
  type CheckHistoryOptions,
  checkHistory,
  type FenceIssue,
  type HeldInterval,
  type HistoryVerdict,
  type Overlap,
} from './history/check.js';
export { eventToJson, type HistoryEvent, parseEvents } from './history/events.js';
export {
  type HeldLock,
  HistoryRecorder,
  type HistoryRecorderOptions,
  hrtimeOf,
  readHistory,
} from './history/recorder.js';
export { commandsInFlight } from './in-flight.js';
export { type RedisMasters, startMasters } from './masters.js';
export { lostMessageBound, type PollingBackoff, pollingAttemptsBound } from './polling-bound.js';
export { freePort } from './ports.js';
export { type ProxiedClient, type ProxiedClientOptions, proxiedClient } from './proxied.js';
export {
  type ProxyDirection,
  type ProxyMode,
  type StartProxyOptions,
  startProxy,
  type TcpProxy,
} from './proxy.js';
export { refusalHiding } from './refusal.js';
export { seededRandom } from './seeded-random.js';
export { type RedisSentinel, type StartSentinelOptions, startSentinel } from './sentinel.js';
export { type Address, PortTakenError, RedisServer, type RedisServerOptions, startRedis } from './server.js';
export {
  buildSkewClock,
  createSkewClock,
  type SkewClock,
  SkewClockUnavailableError,
  serverClockOffset,
  skewClockUnavailable,
} from './skew-clock.js';
export { type WaitOptions, waitFor } from './wait.js';
