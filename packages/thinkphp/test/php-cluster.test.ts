import { type RedisCluster, startCluster } from '@lock/testing';
import { Lock } from '@lock/thinkphp';
import type { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { php, phpAvailable } from './php.js';

// PHP runs Predis in its Redis Cluster mode (`['cluster' => 'redis']`: slot map, MOVED
// redirections) and Node an ioredis Cluster, both on a 3-master cluster without replicas, on
// a hash-tagged name so that our side keys (owner record, fence counter) share its slot.

const KEY = '{lock_goods}:300';
/**
 * Each holder's key lives expire + 1 = 4 s: long enough for two PHP process starts to be refused
 * by it on a loaded host (1 s or more each), where expire 1 left 2 s.
 */
const EXPIRE = 3;

describe.runIf(phpAvailable)('PHP (Predis cluster mode) and Node on a Redis Cluster', () => {
  let cluster: RedisCluster;
  let redis: Cluster;
  /** Predis seeded with every master, and with one master that does not serve the key's slot. */
  let everyMaster: readonly number[];
  let otherMaster: readonly number[];

  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
    redis = cluster.client();
    const slot = Number(await redis.cluster('KEYSLOT', KEY));
    const owner = cluster.slotRanges.find((range) => range.start <= slot && slot <= range.end)!.master;
    everyMaster = cluster.masters.map((master) => master.port);
    otherMaster = [cluster.masters.find((master) => master !== owner)!.port];
  });
  afterAll(() => cluster?.stop());

  const untilExpired = () => expect.poll(() => redis.exists(KEY), { timeout: 10_000, interval: 50 }).toBe(0);

  it('exclude each other both ways on {lock_goods}:300, and our unlock frees it for PHP at once', async () => {
    const args = (cluster: readonly number[]) => ({ port: cluster[0]!, cluster, key: KEY, expire: EXPIRE });

    // Node holds: PHP, from either seed list, is refused and reads our value.
    const lock = new Lock(KEY, { redis, expire: EXPIRE });
    expect(await lock.lock()).toBe(true);
    const ours = await redis.get(KEY);
    expect(await php('lock', args(everyMaster))).toMatchObject({ acquired: false, tries: 3, value: ours });
    expect(await php('lock', args(otherMaster))).toMatchObject({ acquired: false, tries: 3, value: ours });

    // Our unlock deletes our live lock: PHP acquires at once, through a MOVED redirection.
    await lock.unlock();
    expect(lock.handle).toBeNull();
    expect(await redis.exists(KEY)).toBe(0);
    const held = await php('lock', args(otherMaster));
    expect(held).toMatchObject({ acquired: true, ttl: EXPIRE + 1 });

    // PHP holds: we are refused and leave its value; after its TTL we acquire and unlock.
    const refused = new Lock(KEY, { redis, expire: EXPIRE });
    expect(await refused.lock()).toBe(false);
    expect(await redis.get(KEY)).toBe(held.value);
    await untilExpired();
    expect(await refused.lock()).toBe(true);
    expect(await php('lock', args(everyMaster))).toMatchObject({ acquired: false, tries: 3 });
    await refused.unlock();
    expect(await redis.exists(KEY)).toBe(0);
    expect((await php('lock', args(everyMaster))).acquired).toBe(true);
  });
});
