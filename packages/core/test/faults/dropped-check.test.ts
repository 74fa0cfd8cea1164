import { createLocker, LockUnavailableError, UnsafeServerError } from '@lock/core';
import { proxiedClient, startRedis, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';

/**
 * A client made with `autoResendUnfulfilledCommands: false` drops the commands a reset left
 * unanswered and never settles them. The server check the backend caches (the eviction policy,
 * read once before the first acquisition) must then be asked again on the new connection: every
 * acquisition waiting on the dropped one would otherwise time out, for as long as the locker lives.
 */
it("asks the server's eviction policy again when the reply of the first question was dropped by a reset", async () => {
  await using server = await startRedis();
  await using proxied = await proxiedClient(server, { redis: { autoResendUnfulfilledCommands: false } });
  const locker = createLocker({ redis: proxied.redis });
  try {
    // The locker's first command is the check: it reaches the server, its reply is reset.
    proxied.proxy.resetAfter(0, 'downstream', 1);
    const lock = await locker.acquire('checked', { wait: 5_000 });
    expect(proxied.proxy.resets).toBe(1);
    await lock.release();
    const other = await locker.acquire('other', { wait: 2_000 });
    await other.release();
  } finally {
    await locker.close();
  }
}, 20_000);

it('with the default resend, asks the eviction policy once: the client sends the question again itself after the reset', async () => {
  await using server = await startRedis();
  // Reconnects a second after the reset: acquisitions made meanwhile find the question unanswered.
  await using proxied = await proxiedClient(server, { redis: { retryStrategy: () => 1_000 } });
  const direct = server.client();
  const locker = createLocker({ redis: proxied.redis });
  const asked = async () => {
    const stats = await direct.info('commandstats');
    return Number(/cmdstat_config\|get:calls=(\d+)/.exec(stats)?.[1] ?? 0);
  };
  try {
    proxied.proxy.resetAfter(0, 'downstream', 1);
    const first = locker.acquire('first', { wait: 5_000 });
    await waitFor('the reset', async () => proxied.proxy.resets === 1 && proxied.redis.status !== 'ready');
    const second = locker.acquire('second', { wait: 5_000 });
    const locks = await Promise.all([first, second]);
    // The question, run before the reset, then its copy the client sent again: no third.
    expect(await asked()).toBe(2);
    for (const lock of locks) await lock.release();
  } finally {
    await locker.close();
  }
}, 20_000);

it("checks the eviction policy again after a first check Redis did not answer: 'refuse' still refuses", async () => {
  await using server = await startRedis({ config: { 'maxmemory-policy': 'allkeys-lru' } });
  await using proxied = await proxiedClient(server, { redis: { commandTimeout: 300 } });
  const locker = createLocker({ redis: proxied.redis, eviction: 'refuse' });
  try {
    proxied.proxy.blackhole();
    await expect(locker.acquire('unchecked', { wait: 0 })).rejects.toThrow(LockUnavailableError);
    proxied.proxy.pass();
    await expect(locker.acquire('unchecked', { wait: 0 })).rejects.toThrow(UnsafeServerError);
  } finally {
    await locker.close();
  }
}, 20_000);
