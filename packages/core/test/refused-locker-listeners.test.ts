import { createLocker, InvalidOptionError } from '@lock/core';
import { type RedisCluster, type RedisServer, startCluster, startRedis } from '@lock/testing';
import type { Cluster, Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

/** Every event the client is listened to for, with how many listeners: what a locker may leave behind. */
function listenersOn(client: Redis | Cluster): Record<string, number> {
  return Object.fromEntries(client.eventNames().map((name) => [String(name), client.listenerCount(name)]));
}

describe.each([
  ['a standalone client', () => startRedis()],
  ['a cluster client', () => startCluster({ masters: 3, replicasPerMaster: 0 })],
] as const)('the listeners a locker leaves on %s', (_, start) => {
  let deployment: RedisServer | RedisCluster;
  // A client of its own per test: what one test leaves on it must not be taken as the other's start.
  let client: Redis | Cluster;
  beforeAll(async () => {
    deployment = await start();
  });
  beforeEach(async () => {
    client = deployment.client();
    await client.set('ready', '1');
  });
  afterAll(() => deployment.stop());

  it.each([
    ['an engine option', { ttl: -1 }],
    ['a backend option', { replication: { replicas: 0, timeout: 10 } }],
    ['a backend option given as null', { replication: null }],
  ])('are none once a locker was refused for %s', (_, refused) => {
    const before = listenersOn(client);
    expect(() => createLocker({ redis: client, ...(refused as object) })).toThrow(InvalidOptionError);
    expect(listenersOn(client)).toEqual(before);
  });

  it('are none once the last of its lockers closed, and are shared while they are open', async () => {
    const before = listenersOn(client);
    const first = createLocker({ redis: client });
    const open = listenersOn(client);
    const second = createLocker({ redis: client });
    await (await second.acquire('listened', { ttl: 5_000 })).release();
    expect(listenersOn(client)).toEqual(open);
    await first.close();
    await second.close();
    expect(listenersOn(client)).toEqual(before);
  });
});
