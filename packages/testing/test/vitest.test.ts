import { Redis } from 'ioredis';
import { afterEach, beforeAll, beforeEach, describe, expect, inject, it, vi } from 'vitest';
import type { RedisServer } from '../src/index.js';
import { redisUrl, setup, useCluster, useRedis, useSentinel } from '../src/vitest/index.js';
import { alive } from './proc.js';

/** A client that fails at once instead of retrying, to tell a live URL from a dead one. */
async function ping(url: string): Promise<string> {
  const client = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
  client.on('error', () => {});
  try {
    await client.connect();
    return await client.ping();
  } finally {
    client.disconnect();
  }
}

/** Records what the global setup provides. */
function fakeProject() {
  const provided: Record<string, unknown> = {};
  const provide = (key: string, value: unknown) => {
    provided[key] = value;
  };
  return { provided, provide };
}

describe('global setup', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it("provides this project's server to its tests as redisUrl", async () => {
    expect(redisUrl()).toBe(inject('redisUrl'));
    // A run started with REDIS_URL (say, by CI) is handed that URL; otherwise the setup's own server.
    expect(redisUrl()).toMatch(process.env.REDIS_URL || /^redis:\/\/127\.0\.0\.1:\d+$/);
    expect(await ping(redisUrl())).toBe('PONG');
  });

  it('uses an existing REDIS_URL as given and starts nothing', async () => {
    const server = await useRedis();
    vi.stubEnv('REDIS_URL', server.url);
    const project = fakeProject();
    const teardown = await setup(project);
    expect(project.provided).toEqual({ redisUrl: server.url });
    expect(teardown).toBeUndefined();
  });

  it('without REDIS_URL starts a server that its teardown stops', async () => {
    vi.stubEnv('REDIS_URL', '');
    const project = fakeProject();
    const teardown = await setup(project);
    const url = project.provided.redisUrl as string;
    expect(await ping(url)).toBe('PONG');
    await teardown?.();
    await expect(ping(url)).rejects.toThrow(/ECONNREFUSED|Connection is closed/);
  });
});

describe('per-test helpers', () => {
  let pids: number[] = [];
  let outsideTest: unknown;

  beforeAll(() => {
    try {
      void useRedis();
    } catch (error) {
      outsideTest = error;
    }
  });

  it('useRedis, useSentinel and useCluster start topologies for the running test', async () => {
    const [server, sentinel, cluster] = await Promise.all([
      useRedis(),
      useSentinel({ replicas: 1, sentinels: 1 }),
      useCluster({ masters: 1, replicasPerMaster: 0 }),
    ]);
    pids = [server, ...sentinel.nodes, ...sentinel.sentinels, ...cluster.nodes].map((node) => node.pid!);
    expect(pids.every(alive)).toBe(true);
    expect(await cluster.client().set('k', 'v')).toBe('OK');
  });

  it('stops them once that test has finished', () => {
    expect(pids).toHaveLength(5);
    expect(pids.filter(alive)).toEqual([]);
  });

  it('refuses to run outside a test, saying what to do instead', () => {
    expect(outsideTest).toEqual(
      new Error(
        'useRedis() must be called inside a test or beforeEach; for a whole file or suite, start it in beforeAll and return its stop()',
      ),
    );
  });
});

describe('per-test helpers in beforeEach', () => {
  const pids: number[] = [];
  let server: RedisServer;

  beforeEach(async () => {
    server = await useRedis();
    pids.push(server.pid!);
  });

  it('give each test its own server', async () => {
    expect(pids).toHaveLength(1);
    expect(await server.client().ping()).toBe('PONG');
  });

  it("and stop the previous test's server once that test has finished", () => {
    expect(pids).toHaveLength(2);
    expect(alive(pids[0]!)).toBe(false);
    expect(alive(pids[1]!)).toBe(true);
  });
});
