export { RedisServerNotFoundError, redisServerBinary } from './binary.js';
export { freePort } from './ports.js';
export { RedisServer, type RedisServerOptions, startRedis } from './server.js';
