import { createLocker, keySlot, type Lock, type Locker, LockLostError } from '@lock/core';
import {
  type RedisCluster,
  startCluster,
  startProxy,
  startSentinel,
  type TcpProxy,
  waitFor,
} from '@lock/testing';
import type { Cluster, Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';

/**
 * A release whose first reply is lost with its connection is sent again by ioredis: by a
 * cluster's retry of a command its node's closing failed, by a Sentinel-managed client's resend
 * on reconnect (to the same master, or to the one a failover promoted). The copy finds the key the
 * first one deleted gone and answers `not-owner`: that is no proof of a loss. A key deleted under
 * the section, with no connection closed, still is.
 */

// The copy is answered after a reconnect, after a failover too: well within these, on a loaded machine.
const options = { replication: false, eviction: 'ignore', commandTimeout: 60_000 } as const;
const ttl = 120_000;

/**
 * The Redis key of lock `key` under the default prefix, in either protocol: every name here has a
 * hash tag (a legacy name on a cluster needs one), which the token protocol keeps as it is.
 */
const lockKey = (key: string) => `lock:${key}`;

/**
 * Runs `using(key)` whose section calls `cut` as its last step, so the release is the next
 * command; resolves with the section's handle and what `using()` settled with.
 */
async function usingWithCut(locker: Locker, key: string, cut: () => void) {
  let handle: Lock | undefined;
  const outcome = await locker
    .using(key, { ttl }, (lock) => {
      handle = lock;
      cut();
      return 'done';
    })
    .catch((error: unknown) => error);
  return { handle: handle!, outcome };
}

/** A key deleted under the section by another client, with no connection closed: a true loss. */
/**
 * Resets `proxy`'s connection once the release has run, before its reply: `using()` must resolve
 * on the copy ioredis resends, which finds the key the first copy deleted gone; then a true loss
 * on the same locker must still reject.
 */
async function expectResentCopyResolved(
  locker: Locker,
  admin: Redis | Cluster,
  key: string,
  proxy: TcpProxy,
) {
  const { handle, outcome } = await usingWithCut(locker, key, () => proxy.resetAfter(0, 'downstream', 1));
  expect(outcome).toBe('done');
  expect(proxy.resets).toBe(1);
  // The answer using() had: the copy's.
  expect(await handle.release()).toBe('not-owner');
  expect(await admin.exists(lockKey(key))).toBe(0);
  await expectTrueLoss(locker, admin);
}

async function expectTrueLoss(locker: Locker, admin: Redis | Cluster) {
  const taken = await locker
    .using('{taken}', { ttl }, async () => {
      await admin.del(lockKey('{taken}'));
      return 'done';
    })
    .catch((error: unknown) => error);
  expect(taken).toBeInstanceOf(LockLostError);
  expect(taken).toMatchObject({
    key: '{taken}',
    reason: 'taken',
    outcome: { status: 'fulfilled', value: 'done' },
  });
}

describe.each(['token', 'legacy'] as const)('%s protocol', (protocol) => {
  it('on a cluster: resolves using() when the retry of a release whose node connection closed finds the key gone', async () => {
    await using cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
    const proxies = await proxiesInFrontOf(cluster);
    try {
      // Every node reached through its proxy: the cluster's slot map names the nodes, natMap the proxies.
      const natMap = Object.fromEntries(
        proxies.map((proxy) => [`${proxy.target.host}:${proxy.target.port}`, proxy.redisOptions]),
      );
      const redis = cluster.client({ natMap });
      redis.on('error', () => {});
      const admin = cluster.client();
      const locker = createLocker({ redis, protocol, ...options });
      const key = '{k}';
      const proxy = proxies[cluster.slotRanges.findIndex((range) => range.end >= keySlot(lockKey(key)))]!;
      // The release script loaded on the key's node: a release answered NOSCRIPT would lose that answer instead.
      await locker.using(key, () => {});
      // The release runs on the node, its reply is lost with the node's connection, and the
      // cluster sends it again ("Connection is closed.") once it refreshed its slots.
      await expectResentCopyResolved(locker, admin, key, proxy);
      await locker.close();
    } finally {
      await Promise.all(proxies.map((proxy) => proxy.stop()));
    }
  }, 120_000);

  it('behind sentinels: resolves using() when a release resent to the same master on reconnect finds the key gone', async () => {
    await using sentinel = await startSentinel({ replicas: 1, sentinels: 3 });
    const master = await sentinel.master();
    await using proxy = await startProxy({ target: master });
    const redis = sentinel.client({ natMap: { [`${master.host}:${master.port}`]: proxy.redisOptions } });
    redis.on('error', () => {});
    const admin = sentinel.client();
    const locker = createLocker({ redis, protocol, ...options });
    const key = '{k}';
    await locker.using(key, () => {});
    // The reply is lost with the connection; the client asks the sentinels again, is sent to the
    // same master, and resends the release there.
    await expectResentCopyResolved(locker, admin, key, proxy);
    await locker.close();
  }, 120_000);

  it('behind sentinels: resolves using() when a release resent to the master a failover promoted finds the key gone', async () => {
    await using sentinel = await startSentinel({ replicas: 1, sentinels: 3 });
    const old = await sentinel.master();
    await using proxy = await startProxy({ target: old });
    const redis = sentinel.client({ natMap: { [`${old.host}:${old.port}`]: proxy.redisOptions } });
    redis.on('error', () => {});
    const direct = old.client();
    const locker = createLocker({ redis, protocol, ...options });
    const key = '{k}';
    // The replica to be promoted knows the release's script, as one that was master before would:
    // the copy is answered at once there. Answered NOSCRIPT and sent again whole, it would come a
    // round trip behind the master watch's check of the new master, whose 'failover' loss of the
    // (unconfirmed) hold would then come first and hide whether the copy's answer was taken for proof.
    const releaseScripts = await scriptsSentByRelease(locker, redis, key);
    expect(releaseScripts).not.toEqual([]);
    const replica = sentinel.nodes.find((node) => node !== old)!.client();
    for (const script of releaseScripts) await replica.call('SCRIPT', 'LOAD', script);
    // The release runs on the old master and its reply is held back in the proxy.
    const running = usingWithCut(locker, key, () => proxy.delay({ downstream: 600_000 }));
    await waitFor('the release ran on the old master', async () => (await direct.exists(lockKey(key))) === 0);
    // Everything the old master ran so far, the release's DEL included, is on the replica.
    await direct.set('replicated', '1');
    expect(await direct.call('WAIT', '1', '10000')).toBe(1);
    direct.disconnect();
    const promoted = await sentinel.failover();
    expect(promoted).not.toBe(old);
    // The held reply is lost with the connection: the client reconnects to the new master (the
    // old one's proxy refuses it) and resends the release there.
    proxy.drop();
    const { handle, outcome } = await running;
    expect(outcome).toBe('done');
    expect(await handle.release()).toBe('not-owner');
    // The client is on the promoted master: the copy ran there.
    expect(String(await redis.call('INFO', 'server'))).toContain(`tcp_port:${promoted.port}`);
    const admin = sentinel.client();
    expect(await admin.exists(lockKey(key))).toBe(0);
    await expectTrueLoss(locker, admin);
    await locker.close();
  }, 180_000);
});

/**
 * Runs a section of `key` on a connection that has not run its release yet, and answers the
 * scripts the release then sent in full (EVAL, after EVALSHA was answered NOSCRIPT).
 */
async function scriptsSentByRelease(locker: Locker, redis: Redis, key: string): Promise<string[]> {
  const sources: string[] = [];
  const send = redis.sendCommand;
  try {
    await locker.using(key, () => {
      // The section ran: what is sent from now on is the release's.
      redis.sendCommand = ((...args: Parameters<typeof send>) => {
        if (args[0].name === 'eval') sources.push(String(args[0].args[0]));
        return send.apply(redis, args);
      }) as typeof send;
    });
  } finally {
    redis.sendCommand = send;
  }
  return sources;
}

/** A fault proxy in front of each master of `cluster`, in `slotRanges` order. */
async function proxiesInFrontOf(cluster: RedisCluster): Promise<TcpProxy[]> {
  const started: TcpProxy[] = [];
  try {
    for (const { master } of cluster.slotRanges) started.push(await startProxy({ target: master }));
    return started;
  } catch (error) {
    await Promise.all(started.map((proxy) => proxy.stop()));
    throw error;
  }
}
