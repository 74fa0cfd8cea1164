import { createLocker, LockUnavailableError } from '@lock/core';
import { startProxy, startRedis, waitFor } from '@lock/testing';
import { expect, it } from 'vitest';

const COMMAND_TIMEOUT = 3_000;
/** Each reply's delay: a round trip below the command timeout, above the lease, and two above it. */
const REPLY_DELAY = 2_400;
/**
 * What the call may take beyond its deadline on a loaded machine. Waiting out the undo's reply
 * (the failure guarded against) takes another REPLY_DELAY, less what the deadline had left.
 */
const SLACK = 1_000;

it('a grant answered past its validity is undone within the deadline of a call given one attempt', async () => {
  await using server = await startRedis();
  await using proxy = await startProxy({ target: server });
  const redis = server.client(proxy.redisOptions);
  const locker = createLocker({
    redis,
    replication: false,
    eviction: 'ignore',
    commandTimeout: COMMAND_TIMEOUT,
  });
  try {
    // Scripts cached and the fence counter stamped: the attempt below is one round trip.
    const warm = await locker.acquire('warm', { ttl: 1_000 });
    expect(await server.client().exists('{lock:warm}')).toBe(1);
    await warm.release();
    const monitor = await server.client().monitor();
    const seen: string[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (/^eval/i.test(args[0]!) && args.includes('{lock:slow}')) seen.push('{lock:slow}');
      if (args[0] === 'echo') seen.push(args[1]!);
    });
    // Requests reach the server at once: the undo lands there long before its reply comes back.
    proxy.delay({ downstream: REPLY_DELAY });
    const started = performance.now();
    const error = await locker.tryAcquire('slow', { ttl: 100 }).catch((e: unknown) => e);
    const took = performance.now() - started;
    proxy.pass();
    expect(error).toBeInstanceOf(LockUnavailableError);
    // The grant's reply came after its delay and within the command timeout; the cause reports
    // when it came, not when its undo was answered (which is after the command timeout).
    const granted = /^Error: granted (\d+) ms in, past the validity of \d+ ms$/.exec(
      String((error as Error).cause),
    );
    expect(Number(granted?.[1])).toBeGreaterThanOrEqual(REPLY_DELAY);
    expect(Number(granted?.[1])).toBeLessThan(COMMAND_TIMEOUT);
    expect(took).toBeLessThan(COMMAND_TIMEOUT + SLACK);
    // Undone, not left to its lease (which has ended by now anyway): a script naming the key ran
    // after the acquisition's.
    await server.client().echo('done');
    await waitFor('the monitor to catch up', async () => seen.includes('done'));
    expect(seen.filter((name) => name === '{lock:slow}').length).toBeGreaterThanOrEqual(2);
    monitor.disconnect();
  } finally {
    await locker.close();
    redis.disconnect();
  }
}, 20_000);
