export { RedisServerNotFoundError, redisServerBinary } from './binary.js';
export { type RedisCluster, type SlotRange, type StartClusterOptions, startCluster } from './cluster.js';
export { type RedisMasters, startMasters } from './masters.js';
export { freePort } from './ports.js';
export { type RedisSentinel, type StartSentinelOptions, startSentinel } from './sentinel.js';
export { type Address, RedisServer, type RedisServerOptions, startRedis } from './server.js';
export { type WaitOptions, waitFor } from './wait.js';
