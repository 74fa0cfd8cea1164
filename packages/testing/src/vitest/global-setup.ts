import type { TestProject } from 'vitest/node';
import { startRedis } from '../server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The Redis the project's tests share: `REDIS_URL` when set, else a server started for the run. */
    redisUrl: string;
  }
}

/**
 * Vitest global setup: provides `redisUrl` to the project's tests, read with `inject('redisUrl')`
 * or `redisUrl()`. An existing `REDIS_URL` is used as given and nothing is started; otherwise one
 * redis-server is started for the whole run and stopped by the returned teardown.
 */
export async function setup(
  project: Pick<TestProject, 'provide'>,
): Promise<(() => Promise<void>) | undefined> {
  const configured = process.env.REDIS_URL;
  if (configured) {
    project.provide('redisUrl', configured);
    return undefined;
  }
  const server = await startRedis();
  project.provide('redisUrl', server.url);
  return () => server.stop();
}
