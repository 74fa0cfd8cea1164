import { createHash } from 'node:crypto';
import { proxiedClient, startRedis, type TcpProxy, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisson, type Redisson } from '../src/index.js';
import { JavaPeer } from './peer/java-peer.js';

/**
 * A fair-lock waiter whose connection turns slow while it waits: the holder unlocks, the
 * waiter's attempt takes the lock in its turn, but the reply comes back after the attempt timed
 * out, so the engine gives that grant back (the owner `<uuid>:<thread>` is not fresh: a later
 * attempt would count a second hold). Given back as an unlock, it freed the lock for the next
 * waiter in the queue, and the waiter, ahead of it all along, got the lock after it. The
 * waiter's client sleeps 2 s or more between attempts, so the grant given back lands before its
 * next attempt does, as it does when a brief outage ends between two attempts.
 */
const sha1 = (source: string) => createHash('sha1').update(source).digest('hex');

describe('a fair-lock waiter whose replies come late keeps its turn', () => {
  let stop: () => Promise<void>;
  let proxy: TcpProxy;
  let direct: Redis;
  /** Scripts run on the server, as [client address, sha, ...keys and args], in execution order. */
  const scripts: string[][] = [];
  let slow: Redisson;
  let fast: Redisson;
  let peer: JavaPeer;

  beforeAll(async () => {
    const server = await startRedis();
    const proxied = await proxiedClient(server);
    proxy = proxied.proxy;
    direct = server.client();
    const monitor = await server.client().monitor();
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      const command = args[0]?.toLowerCase();
      if (command === 'evalsha') scripts.push([source, ...args.slice(1)]);
      // A script sent whole (the fair lock's undo and give-up, or any script the server did not know yet) by its sha.
      if (command === 'eval') scripts.push([source, sha1(args[1] ?? ''), ...args.slice(2)]);
    });
    slow = createRedisson({
      redis: proxied.redis,
      commandTimeout: 500,
      retry: { base: 2_000, max: 4_000, jitter: 0 },
    });
    fast = createRedisson({ redis: server.client() });
    peer = new JavaPeer(server.client(), server.client());
    stop = async () => {
      monitor.disconnect();
      await slow.shutdown();
      await fast.shutdown();
      await proxied.close();
      await server.stop();
    };
  });
  afterAll(() => stop());

  /**
   * Makes every reply to the waiter (thread 1 of `slow`) come 2 command timeouts late while its
   * requests still land at once, and unlocks the holder of `name`. Answers the sha of the
   * waiter's acquire script, and a wait for a script of the waiter's run since, chosen by its sha
   * and first key.
   */
  async function unlockWhileSlow(name: string) {
    // The waiter's own connection: the one its acquire script came from.
    const [from, acquireSha] = scripts.find((script) => script.includes(`${slow.id}:1`)) ?? [];
    expect(from).toBeDefined();
    const seen = scripts.length;
    proxy.delay({ downstream: 1_000 });
    await fast.getFairLock(name).unlock({ threadId: 1 });
    const waiterRan = (what: string, which: (sha: string | undefined, key: string | undefined) => boolean) =>
      waitFor(
        what,
        async () => scripts.slice(seen).some(([source, sha, , key]) => source === from && which(sha, key)),
        { interval: 20 },
      );
    return { acquireSha, waiterRan };
  }

  /** The waiter queued behind: how it waits (resolving once it holds the lock) and unlocks. */
  const nextWaiters: [
    kind: string,
    wait: (name: string) => Promise<unknown>,
    unlock: (name: string) => Promise<unknown>,
  ][] = [
    [
      'a Node thread',
      (name) => fast.getFairLock(name).lock({ threadId: 2 }),
      (name) => fast.getFairLock(name).unlock({ threadId: 2 }),
    ],
    ['a Java thread', (name) => peer.fairTryLock(name, 1, 20_000), (name) => peer.fairUnlock(name, 1)],
  ];

  it.each(nextWaiters)(
    'takes the lock before the waiter queued behind it, %s',
    async (kind, wait, unlock) => {
      const name = `late-turn:${kind}`;
      const queue = `redisson_lock_queue:{${name}}`;
      const order: string[] = [];
      await fast.getFairLock(name).lock({ threadId: 1 });
      const waiter = slow
        .getFairLock(name)
        .lock({ threadId: 1 })
        .then(() => order.push('waiter'));
      await waitFor('the waiter queued', async () => (await direct.llen(queue)) === 1);
      const next = wait(name).then(() => order.push('next'));
      await waitFor('the next waiter queued behind it', async () => (await direct.llen(queue)) === 2);

      const { acquireSha, waiterRan } = await unlockWhileSlow(name);
      // Until the engine has given back at least one grant: a script of the waiter's other than an acquire.
      await waiterRan('a late grant given back', (sha) => sha !== acquireSha);
      proxy.pass();

      await waitFor('a waiter served', async () => order.length > 0);
      if (order[0] === 'waiter') await slow.getFairLock(name).unlock({ threadId: 1 });
      else await unlock(name);
      await Promise.all([waiter, next]);
      expect(order).toEqual(['waiter', 'next']);
      expect(await direct.llen(queue)).toBe(0);
    },
    30_000,
  );

  it('frees the late grant of a waiter that gave up before its reply came, for the waiter behind it', async () => {
    const name = 'late-turn:gave-up';
    const queue = `redisson_lock_queue:{${name}}`;
    const owner = `${slow.id}:1`;
    await fast.getFairLock(name).lock({ threadId: 1 });
    const controller = new AbortController();
    const waiter = slow
      .getFairLock(name)
      .lock({ threadId: 1, signal: controller.signal })
      .then(
        () => 'acquired',
        (error: unknown) => error,
      );
    await waitFor('the waiter queued', async () => (await direct.llen(queue)) === 1);
    let nextHolds = false;
    const next = fast
      .getFairLock(name)
      .lock({ threadId: 2 })
      .then(() => {
        nextHolds = true;
      });
    await waitFor('the next waiter queued behind it', async () => (await direct.llen(queue)) === 2);
    const { acquireSha, waiterRan } = await unlockWhileSlow(name);
    await waiterRan('the waiter granted in its turn', (sha) => sha === acquireSha);
    // A waiter's owner is not fresh: its call ends once the attempt timed out, before the reply.
    controller.abort();
    expect(await waiter).toBeInstanceOf(Error);
    // The grant given back after the call ended: the undo's first key is the lock itself.
    await waiterRan('the late grant given back', (sha, key) => sha !== acquireSha && key === name);
    proxy.pass();
    // Kept for a call that will never claim it, it would hold the queue up for the grace.
    expect(await direct.hexists(name, owner)).toBe(0);
    await next;
    expect(nextHolds).toBe(true);
    await fast.getFairLock(name).unlock({ threadId: 2 });
    expect(await direct.llen(queue)).toBe(0);
  }, 30_000);
});
