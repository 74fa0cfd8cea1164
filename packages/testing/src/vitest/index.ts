import { inject, onTestFinished } from 'vitest';
import { type RedisCluster, type StartClusterOptions, startCluster } from '../cluster.js';
import { type RedisMasters, startMasters } from '../masters.js';
import { type RedisSentinel, type StartSentinelOptions, startSentinel } from '../sentinel.js';
import { type RedisServer, type RedisServerOptions, startRedis } from '../server.js';

export { setup } from './global-setup.js';

/** The URL the global setup provided (see `setup`). */
export function redisUrl(): string {
  return inject('redisUrl');
}

/**
 * Starts a topology for the running test and stops it when that test finishes, passed, failed
 * or timed out, even if it finishes while the topology is still starting.
 */
function forThisTest<T extends { stop(): Promise<void> }>(
  helper: string,
  start: () => Promise<T>,
): Promise<T> {
  let starting: Promise<T> | undefined;
  try {
    onTestFinished(async () => {
      const topology = await starting?.catch(() => undefined);
      await topology?.stop();
    });
  } catch {
    throw new Error(
      `${helper}() must be called inside a test or beforeEach; for a whole file or suite, start it in beforeAll and return its stop()`,
    );
  }
  starting = start();
  return starting;
}

/** `startRedis` for the running test, stopped when it finishes: for a server the test breaks on purpose. */
export function useRedis(options?: RedisServerOptions): Promise<RedisServer> {
  return forThisTest('useRedis', () => startRedis(options));
}

/** `startMasters` for the running test, stopped when it finishes. */
export function useMasters(count?: number, options?: RedisServerOptions): Promise<RedisMasters> {
  return forThisTest('useMasters', () => startMasters(count, options));
}

/** `startSentinel` for the running test, stopped when it finishes. */
export function useSentinel(options?: StartSentinelOptions): Promise<RedisSentinel> {
  return forThisTest('useSentinel', () => startSentinel(options));
}

/** `startCluster` for the running test, stopped when it finishes. */
export function useCluster(options?: StartClusterOptions): Promise<RedisCluster> {
  return forThisTest('useCluster', () => startCluster(options));
}
