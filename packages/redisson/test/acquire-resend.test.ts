import { proxiedClient, startRedis, type TcpProxy } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisson, type Redisson, type RLock } from '../src/index.js';
import { JavaPeer } from './peer/java-peer.js';

/**
 * An acquire lands on Redis but its reply is lost: the proxy resets the connection before the
 * first reply byte, and ioredis resends the script once it has reconnected, so Redis runs it
 * twice. The thread gets one hold from the engine; a second count would outlive its unlock()
 * and lock Java and every other thread out until the lease ends (for ever, while the thread
 * keeps locking and unlocking). The attempt's latch makes the copy answer the hold as it stands.
 */
describe('an acquire resent by ioredis after a connection reset counts once', () => {
  let stop: () => Promise<void>;
  let proxy: TcpProxy;
  let direct: Redis;
  let redisson: Redisson;
  let peer: JavaPeer;

  beforeAll(async () => {
    const server = await startRedis();
    const proxied = await proxiedClient(server);
    proxy = proxied.proxy;
    direct = server.client();
    // The resent script's reply, not the command timeout, ends the call: the engine takes its answer.
    redisson = createRedisson({ redis: proxied.redis, commandTimeout: 5_000 });
    peer = new JavaPeer(server.client(), server.client());
    stop = async () => {
      await redisson.shutdown();
      await proxied.close();
      await server.stop();
    };
  });
  afterAll(() => stop());

  /** Each kind by name, and how a Java thread tries it once (null: taken), as the one it must not lock out. */
  const kinds: [
    kind: string,
    lock: (name: string) => RLock,
    javaTakes: (name: string) => Promise<number | null>,
  ][] = [
    ['RLock', (name) => redisson.getLock(name), (name) => peer.tryLockOnce(name, 1)],
    ['fenced lock', (name) => redisson.getFencedLock(name), (name) => peer.tryLockOnce(name, 1)],
    ['fair lock', (name) => redisson.getFairLock(name), (name) => peer.fairTryLockOnce(name, 1)],
    [
      'write lock',
      (name) => redisson.getReadWriteLock(name).writeLock(),
      (name) => peer.writeTryLockOnce(name, 1),
    ],
    [
      'read lock',
      (name) => redisson.getReadWriteLock(name).readLock(),
      (name) => peer.writeTryLockOnce(name, 1),
    ],
  ];

  /**
   * The lock's keys that outlive its holds for no reason: its hash, the read lock's per-hold keys
   * and the attempt latches. Left out: the unlock latches (a retried unlock must find them) and
   * the fence counter (it never expires, as in Redisson).
   */
  const lockKeys = async (name: string) =>
    (await direct.keys(`*${name}*`)).filter((key) => !/^redisson_(unlock_latch|lock_token):/.test(key));

  it.each(kinds)(
    '%s: a first acquisition resent, then unlock(), frees the lock',
    async (kind, make, javaTakes) => {
      const lock = make(`first:${kind}`);
      // The scripts are loaded first: a NOSCRIPT answer would be what the reset loses, and nothing would land twice.
      await redisson.run(async () => {
        await lock.lock();
        await lock.unlock();
      });
      const resets = proxy.resets;
      await redisson.run(async () => {
        proxy.resetAfter(0, 'downstream', 1);
        await lock.lock();
        expect(proxy.resets).toBe(resets + 1);
        expect(await lock.getHoldCount()).toBe(1);
        await lock.unlock();
      });
      expect(await lockKeys(lock.name)).toEqual([]);
      expect(await javaTakes(lock.name)).toBeNull();
    },
  );

  it.each(kinds)(
    '%s: a re-entry resent, then two unlock(), frees the lock',
    async (kind, make, javaTakes) => {
      const lock = make(`again:${kind}`);
      await redisson.run(async () => {
        await lock.lock();
        await lock.unlock();
      });
      const resets = proxy.resets;
      await redisson.run(async () => {
        await lock.lock();
        proxy.resetAfter(0, 'downstream', 1);
        await lock.lock();
        expect(proxy.resets).toBe(resets + 1);
        expect(await lock.getHoldCount()).toBe(2);
        await lock.unlock();
        await lock.unlock();
      });
      expect(await lockKeys(lock.name)).toEqual([]);
      expect(await javaTakes(lock.name)).toBeNull();
    },
  );
});
