import { InvalidOptionError } from '@lock/core';
import { Redis, type RedisOptions } from 'ioredis';
import type { ThinkEnv } from './env.js';

/**
 * ioredis options from the settings the seed's `Redis` base class reads: `redis.host`,
 * `redis.port`, `redis.auth` (password; empty means none) and `redis.database`. Missing ones get
 * Redis's defaults (127.0.0.1, 6379, no password, database 0), where the seed's class cannot
 * connect: it hands `Env::get`'s null on to Predis.
 */
export function thinkRedisOptions(env: ThinkEnv): RedisOptions {
  const host = String(env.get('redis.host', '127.0.0.1'));
  // PHP connects to `tcp://host:06379`, but Redis refuses `SELECT 01`, which Predis sends as
  // written: with that database PHP would lock nowhere.
  const port = wholeNumber(env, 'redis.port', 6379, 1, 65_535, true);
  const db = wholeNumber(env, 'redis.database', 0, 0, Number.MAX_SAFE_INTEGER, false);
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

/** `leadingZeros`: whether the PHP side can use the number written with them. */
function wholeNumber(
  env: ThinkEnv,
  name: string,
  fallback: number,
  min: number,
  max: number,
  leadingZeros: boolean,
): number {
  const raw = env.get(name, String(fallback));
  const digits = leadingZeros ? /^\d+$/ : /^(?:0|[1-9]\d*)$/;
  const value = typeof raw === 'string' && digits.test(raw) ? Number(raw) : Number.NaN;
  if (!(value >= min && value <= max))
    throw new InvalidOptionError(
      name,
      raw,
      `a whole number from ${min} to ${max}${leadingZeros ? '' : ' without leading zeros'}; read from ${env.origin(name)}`,
    );
  return value;
}
