import { type ProxiedClient, proxiedClient, type RedisMasters, startMasters } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { QuorumError } from '../../src/errors.js';
import type { LockProtocol, RedisClient } from '../../src/protocol.js';
import { createRedlock, quorumBackend } from '../../src/redlock/index.js';
import { freshKey, protocol } from './support.js';

// ioredis resends a command whose reply a reconnect lost, so a release the master applied runs
// there twice. Where the owner holds the key more than once (an explicit owner's earlier hold, a
// re-entry), the copy must not take off the count of a hold still in use.
let masters: RedisMasters;
let direct: Redis[];
beforeAll(async () => {
  masters = await startMasters(3);
  direct = masters.clients();
  // Scripts loaded on every master: a release answered NOSCRIPT would be sent again as EVAL, once.
  const warm = createRedlock({ clients: direct });
  await (await warm.acquire('warm-up', { ttl: 1_000 })).release();
  await warm.close();
});
afterAll(async () => {
  await masters.stop();
});

/** Hold counts of `resource` on each master (0 where free). */
function holdsOn(resource: string): Promise<number[]> {
  return Promise.all(direct.map(async (client) => (await protocol.inspect(client, resource)).holds));
}

/**
 * The token protocol over `proxied` clients, except that once `cut()` is called every release
 * or undo sent through one of them loses its reply: the proxy resets the connection after the
 * master ran the script, and ioredis sends it again once it has reconnected. `answered()`
 * settles when each of them has its answer, the copy's.
 */
function losingReplies(proxied: readonly ProxiedClient[]) {
  const sent: Promise<unknown>[] = [];
  let cutting = false;
  const cut =
    <A extends unknown[], T>(send: (redis: RedisClient, ...rest: A) => Promise<T>) =>
    (redis: RedisClient, ...rest: A): Promise<T> => {
      const proxy = proxied.find((each) => each.redis === redis)?.proxy;
      if (cutting && proxy) proxy.resetAfter(0, 'downstream', 1);
      const reply = send(redis, ...rest);
      if (cutting) sent.push(reply.catch(() => {}));
      return reply;
    };
  const losing: LockProtocol = Object.create(protocol, {
    release: { value: cut(protocol.release.bind(protocol)) },
    undo: { value: cut(protocol.undo!.bind(protocol)) },
  });
  return {
    protocol: losing,
    cut: () => {
      cutting = true;
    },
    answered: () => Promise.all(sent),
  };
}

async function proxying(): Promise<ProxiedClient[]> {
  return Promise.all(masters.servers.map((server) => proxiedClient(server)));
}

it("keeps the outer hold when a failed re-entry's release is resent", async () => {
  const proxied = await proxying();
  try {
    const faults = losingReplies(proxied);
    const key = freshKey('failed-reentry');
    const holder = quorumBackend({ clients: direct });
    expect(await holder.acquire(key, 'svc', 20_000, { wait: 0, attempt: 'outer' })).toMatchObject({
      acquired: true,
    });
    // Its clock jumps a whole ttl during each attempt: every grant comes back past its validity.
    let now = 0;
    const late = quorumBackend({
      clients: proxied.map((each) => each.redis),
      protocol: faults.protocol,
      clock: () => {
        now += 20_000;
        return now;
      },
    });
    faults.cut();
    await expect(late.acquire(key, 'svc', 20_000, { wait: 0, attempt: 'reentry' })).rejects.toBeInstanceOf(
      QuorumError,
    );
    await faults.answered();
    expect(proxied.map((each) => each.proxy.resets)).toEqual([1, 1, 1]);
    expect(await holdsOn(key)).toEqual([1, 1, 1]);
    expect(await holder.acquire(key, 'other', 1_000)).toMatchObject({ acquired: false });
    await Promise.all([holder.close(), late.close()]);
  } finally {
    await Promise.all(proxied.map((each) => each.close()));
  }
});

it("keeps the outer hold when the undo of a re-entry's grant is resent", async () => {
  const proxied = await proxying();
  try {
    const faults = losingReplies(proxied);
    const key = freshKey('undone-reentry');
    const backend = quorumBackend({ clients: proxied.map((each) => each.redis), protocol: faults.protocol });
    await backend.acquire(key, 'svc', 20_000, { wait: 0, attempt: 'outer' });
    const reentry = await backend.acquire(key, 'svc', 20_000, { wait: 0, attempt: 'reentry' });
    expect(reentry).toMatchObject({ acquired: true, holds: 2 });
    faults.cut();
    await backend.undo!(key, 'svc', (reentry as { token: string }).token, { wait: 0, attempt: 'reentry' });
    await faults.answered();
    expect(proxied.map((each) => each.proxy.resets)).toEqual([1, 1, 1]);
    expect(await holdsOn(key)).toEqual([1, 1, 1]);
    await backend.close();
  } finally {
    await Promise.all(proxied.map((each) => each.close()));
  }
});

it("keeps another locker's hold of a shared explicit owner when close()'s release is resent", async () => {
  const proxied = await proxying();
  try {
    const faults = losingReplies(proxied);
    const key = freshKey('shared-owner');
    const x = createRedlock({ clients: direct, prefix: '' });
    const y = createRedlock({
      clients: proxied.map((each) => each.redis),
      protocol: faults.protocol,
      prefix: '',
    });
    const held = await x.acquire(key, { owner: 'svc', ttl: 20_000 });
    expect(await y.acquire(key, { owner: 'svc', ttl: 20_000 })).toMatchObject({ holds: 2 });
    faults.cut();
    // Y's handle was never released: close() releases it, with no release id of the engine's.
    await y.close();
    await faults.answered();
    expect(proxied.map((each) => each.proxy.resets)).toEqual([1, 1, 1]);
    expect(await holdsOn(key)).toEqual([1, 1, 1]);
    const z = createRedlock({ clients: direct, prefix: '' });
    expect(await z.tryAcquire(key, { ttl: 1_000 })).toBeNull();
    expect(held.signal.aborted).toBe(false);
    await held.release();
    await Promise.all([x.close(), z.close()]);
  } finally {
    await Promise.all(proxied.map((each) => each.close()));
  }
});
