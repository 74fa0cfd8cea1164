import { InvalidOptionError } from '@lock/core';
import { Redis, type RedisOptions } from 'ioredis';
import type { ThinkEnv } from './env.js';

/**
 * ioredis options from the settings the seed's `Redis` base class reads: `redis.host`,
 * `redis.port`, `redis.auth` (password; empty means none) and `redis.database`. Missing host
 * and port fall back to Predis' defaults, 127.0.0.1 and 6379.
 */
export function thinkRedisOptions(env: ThinkEnv): RedisOptions {
  const host = String(env.get('redis.host', '127.0.0.1'));
  const port = wholeNumber(env, 'redis.port', 6379, 1, 65_535);
  const db = wholeNumber(env, 'redis.database', 0, 0, Number.MAX_SAFE_INTEGER);
  const auth = env.get('redis.auth');
  const password = typeof auth === 'string' && auth !== '' ? auth : undefined;
  return { host, port, db, ...(password === undefined ? {} : { password }) };
}

/** A new ioredis client for the app's `.env` settings; the caller owns it (and quits it). */
export function connectThinkRedis(env: ThinkEnv, options: RedisOptions = {}): Redis {
  return new Redis({ ...thinkRedisOptions(env), ...options });
}

/**
 * Why an env's connection is refused when the server answers its SELECT with an error (a
 * database past its `databases`, or a Redis Cluster): Predis then fails, and PHP locks nothing.
 */
export function databaseRefused(env: ThinkEnv, answer: string): InvalidOptionError {
  return new InvalidOptionError(
    'redis.database',
    env.get('redis.database'),
    `a database the server has, which answered ${JSON.stringify(answer)}; read from ${env.origin('redis.database')}`,
  );
}

function wholeNumber(env: ThinkEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env.get(name, String(fallback));
  const value = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= min && value <= max))
    throw new InvalidOptionError(
      name,
      raw,
      `a whole number from ${min} to ${max}; read from ${env.origin(name)}`,
    );
  return value;
}
