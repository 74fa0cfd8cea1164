import type { LockLostError } from '@lock/core';
import {
  connectedAgainOnEnd,
  type RedisSentinel,
  type RedisServer,
  startSentinel,
  waitFor,
} from '@lock/testing';
import { Lock } from '@lock/thinkphp';
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { php, phpAvailable } from './php.js';

// Default mode behind Sentinel, with ioredis' failoverDetector as core's README asks. A server
// with a replica makes each grant WAIT-confirmed ('auto' replication), so a hold is on the
// replica before lock() answers: it survives the failover, keeps excluding others, and its
// unlock frees it on the new master. Fences then go on in the next epoch (core's "Failover
// awareness"), above every one drawn on the old master.

const EPOCH = 2 ** 32;
const KEY = 'lock_goods:300';
// Same namespace as KEY: one fence counter, so its epoch change shows on this lock's next grant.
const PROBE = 'lock_goods:301';

/** Whether `redis` (a Sentinel client) talks to `server` now. */
async function connectedTo(redis: Redis, server: RedisServer): Promise<boolean> {
  return (await redis.info('server')).includes(`\r\ntcp_port:${server.port}\r\n`);
}

async function heldAcrossFailover(setup: RedisSentinel, failover: () => Promise<RedisServer>): Promise<void> {
  const holderRedis = setup.client({ failoverDetector: true });
  const otherRedis = setup.client({ failoverDetector: true });
  // ioredis may end either client when the master is killed (see connectedAgainOnEnd).
  const stopReconnecting = [holderRedis, otherRedis].map(connectedAgainOnEnd);
  try {
    const fences: number[] = [];
    // Earlier fences on the old master: a released lock, then the hold.
    const earlier = new Lock(KEY, { redis: holderRedis, expire: 30 });
    expect(await earlier.lock()).toBe(true);
    fences.push(earlier.handle!.fence);
    await earlier.unlock();
    const holder = new Lock(KEY, { redis: holderRedis, expire: 30 });
    expect(await holder.lock()).toBe(true);
    const held = holder.handle!;
    fences.push(held.fence);
    const value = await holderRedis.get(KEY);

    const promoted = await failover();
    for (const redis of [holderRedis, otherRedis]) {
      await waitFor(`a client on the new master ${promoted.port}`, () => connectedTo(redis, promoted));
    }
    // The holder's client has stamped its counter on the new master once a grant there is in
    // the next epoch: by then an unconfirmed hold would have aborted, this confirmed one must not.
    const probe = new Lock(PROBE, { redis: holderRedis, expire: 30 });
    expect(await probe.lock()).toBe(true);
    expect(probe.handle!.fence).toBeGreaterThan(EPOCH);
    fences.push(probe.handle!.fence);
    await probe.unlock();
    expect(held.signal.aborted, String((held.signal.reason as LockLostError | undefined)?.reason)).toBe(
      false,
    );
    expect(await promoted.client().get(KEY)).toBe(value);

    const second = new Lock(KEY, { redis: otherRedis, expire: 30, retryMax: 1 });
    expect(await second.lock()).toBe(false);
    if (phpAvailable) {
      // The PHP class, on the promoted master's address, reads Node's lock and is refused too.
      expect(await php('lock', { port: promoted.port, key: KEY, expire: 30 })).toMatchObject({
        acquired: false,
        value,
      });
    }

    await holder.unlock();
    expect(holder.handle).toBeNull();
    expect(await promoted.client().exists(KEY)).toBe(0);
    expect(await second.lock()).toBe(true);
    const next = second.handle!.fence;
    expect(next).toBeGreaterThan(EPOCH);
    expect(next).toBeGreaterThan(Math.max(...fences));
    await second.unlock();
  } finally {
    for (const stop of stopReconnecting) stop();
  }
}

it('a WAIT-confirmed hold survives SENTINEL FAILOVER: it excludes, unlocks on the new master, fences go on above', async () => {
  await using setup = await startSentinel({ replicas: 1, sentinels: 3 });
  await heldAcrossFailover(setup, () => setup.failover());
});

it('a WAIT-confirmed hold survives the master being killed: the same, on the replica the sentinels promote', async () => {
  // An election the sentinels fail on a loaded host is tried again twice the failover timeout
  // later: 8 s, where the default (10 s) would have the promotion take over 20 s.
  await using setup = await startSentinel({
    replicas: 1,
    sentinels: 3,
    failoverTimeout: 4_000,
    timeout: 60_000,
  });
  await heldAcrossFailover(setup, async () => {
    const old = await setup.master();
    await old.kill();
    // Past the last +switch-master, on which the clients (`failoverDetector`) connect again.
    return setup.switchedFrom(old);
  });
}, 120_000);
