import { createLocker, LockUnavailableError } from '@lock/core';
import { startRedis, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';

/** How often the server was sent `command`: run, failed, or refused before running. */
async function sent(redis: Redis, command: string): Promise<{ calls: number; rejected: number }> {
  const info = await redis.info('commandstats');
  const line = info.split('\r\n').find((entry) => entry.startsWith(`cmdstat_${command}:`)) ?? '';
  const field = (name: string) => Number(line.match(new RegExp(`[:,]${name}=(\\d+)`))?.[1] ?? 0);
  return { calls: field('calls'), rejected: field('rejected_calls') };
}

describe('error replies that mean the server cannot serve now', () => {
  it('a demoted master (READONLY) is unavailable, not a bug: refused as such with wait 0, waited out until it is promoted again', async () => {
    await using primary = await startRedis();
    await using demoted = await startRedis();
    const admin = demoted.client();
    await admin.replicaof(primary.host, String(primary.port));
    const locker = createLocker({ redis: demoted.client() });

    const refused = await locker.acquire('order', { wait: 0 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(LockUnavailableError);
    expect((refused as LockUnavailableError).cause).toMatchObject({
      message: expect.stringMatching(/^READONLY /),
    });

    const before = await sent(admin, 'evalsha');
    const waiting = locker.acquire('order', { wait: 20_000 });
    await waitFor('two more attempts refused READONLY', async () => {
      return (await sent(admin, 'evalsha')).calls >= before.calls + 2;
    });
    await admin.replicaof('NO', 'ONE');
    const lock = await waiting;
    expect(await admin.hget('{lock:order}', '')).toBe(String(lock.fence));
    expect(await lock.release()).toBe('released');
    await locker.close();
  });

  it('a server busy running a script (BUSY) is waited out', async () => {
    await using server = await startRedis({ config: { 'busy-reply-threshold': '20' } });
    const locker = createLocker({ redis: server.client() });
    // The first acquisition's own checks (eviction policy, fence stamp) are done before the script.
    await (await locker.acquire('warm')).release();
    const spinning = server
      .client()
      .eval(
        "local function us() local t = redis.call('time') return t[1] * 1000000 + t[2] end local stop = us() + 1500000 repeat until us() >= stop return 1",
        0,
      );
    const probe = server.client();
    await waitFor('the server answering BUSY', () =>
      probe.ping().then(
        () => false,
        (error: Error) => error.message.startsWith('BUSY '),
      ),
    );

    const lock = await locker.acquire('order', { wait: 20_000 });
    expect(await spinning).toBe(1);
    expect((await sent(probe, 'evalsha')).rejected).toBeGreaterThan(0);
    expect(await lock.release()).toBe('released');
    await locker.close();
  });
});
