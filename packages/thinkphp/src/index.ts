export { connectThinkRedis, thinkRedisOptions } from './connection.js';
export { loadThinkEnv, parseThinkEnv, ThinkEnv, ThinkEnvError } from './env.js';
export { Lock, type LockOptions } from './lock.js';
