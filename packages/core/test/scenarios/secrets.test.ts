import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { createLocker, type Lock, lockEvents } from '@lock/core';
import { startRedis, waitFor } from '@lock/testing';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';

const PASSWORD = 'pw-Sup3rSecret-7731';
const WRONG = 'pw-Wr0ngGuess-4410';

/** Everything an error shows: name, message, stack, own fields, and the same for its causes. */
function everythingIn(error: unknown, depth = 0): string {
  if (!(error instanceof Error) || depth > 5) return String(error);
  const fields = JSON.stringify(error, (_, value: unknown) =>
    typeof value === 'bigint' ? String(value) : value,
  );
  return [error.name, error.message, error.stack ?? '', fields, everythingIn(error.cause, depth + 1)].join(
    '\n',
  );
}

/** The errors that show one of `secrets`, as `<name>: <what it shows>`, for a readable failure. */
function leaking(errors: readonly unknown[], secrets: readonly string[]): string[] {
  return errors.flatMap((error) => {
    const text = everythingIn(error);
    const shown = secrets.filter((secret) => text.includes(secret));
    if (shown.length === 0) return [];
    const line = text.split('\n').find((one) => shown.some((secret) => one.includes(secret)));
    return [`${(error as Error).name}: ${line}`];
  });
}

function quiet(client: Redis): Redis {
  client.on('error', () => {});
  return client;
}

/** Collects every lock event published while `run` runs, as JSON text. */
async function eventsDuring(run: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const listener = (message: unknown, name: string | symbol) => {
    seen.push(
      `${String(name)} ${JSON.stringify(message, (_, value: unknown) => (value instanceof Error ? everythingIn(value) : value))}`,
    );
  };
  for (const channel of Object.values(lockEvents)) subscribe(channel.name, listener);
  try {
    await run();
  } finally {
    for (const channel of Object.values(lockEvents)) unsubscribe(channel.name, listener);
  }
  return seen;
}

describe('secrets never show in errors or events (password-protected server)', () => {
  it('a wrong password, in options or in a URL, fails without the password in any error', async () => {
    await using server = await startRedis({ config: { requirepass: PASSWORD } });
    const failures: unknown[] = [];
    const clients = [
      quiet(new Redis({ ...server.redisOptions, password: WRONG, maxRetriesPerRequest: 0 })),
      quiet(new Redis(`redis://someone:${WRONG}@${server.host}:${server.port}`, { maxRetriesPerRequest: 0 })),
    ];
    for (const redis of clients) {
      const locker = createLocker({ redis });
      failures.push(await locker.acquire('secret', { ttl: 1_000, wait: 0 }).catch((error: unknown) => error));
      await locker.close();
      redis.disconnect();
    }
    for (const failure of failures) expect(failure).toBeInstanceOf(Error);
    expect(leaking(failures, [WRONG, PASSWORD])).toEqual([]);
  });

  it('an unreachable server with credentials in the URL: no credential in the error', async () => {
    const server = await startRedis({ config: { requirepass: PASSWORD } });
    const url = `redis://default:${PASSWORD}@${server.host}:${server.port}`;
    await server.stop();
    const redis = quiet(new Redis(url, { maxRetriesPerRequest: 0, retryStrategy: () => null }));
    const locker = createLocker({ redis });
    const failure = await locker.acquire('gone', { ttl: 1_000, wait: 0 }).catch((error: unknown) => error);
    await locker.close();
    redis.disconnect();
    expect(failure).toBeInstanceOf(Error);
    expect(everythingIn(failure)).not.toContain(PASSWORD);
  });

  it('events of acquire, extend, release and a lost lock name no password; errors name no owner token', async () => {
    await using server = await startRedis({ config: { requirepass: PASSWORD } });
    const redis = server.client({ password: PASSWORD });
    const locker = createLocker({ redis, ttl: 600 });
    const other = createLocker({ redis: server.client({ password: PASSWORD }) });
    const errors: unknown[] = [];
    let lock: Lock | undefined;
    const events = await eventsDuring(async () => {
      lock = await locker.acquire('events', { owner: 'owner-token-Q9Zx' });
      await lock.extend();
      errors.push(await other.acquire('events', { wait: 0 }).catch((error: unknown) => error));
      errors.push(await other.acquire('events', { wait: 100 }).catch((error: unknown) => error));
      await lock.release();
      errors.push(await lock.extend().catch((error: unknown) => error));
      errors.push(
        await Promise.resolve()
          .then(() => lock!.assertHeld())
          .catch((error: unknown) => error),
      );
      const lost = await locker.acquire('lost', { owner: 'owner-token-Q9Zx' });
      await redis.del('{lock:lost}');
      await waitFor('the watchdog to find the lock lost', async () => lost.signal.aborted, {
        timeout: 5_000,
      });
      errors.push(lost.signal.reason);
      errors.push(
        await Promise.resolve()
          .then(() => lost.assertHeld())
          .catch((error: unknown) => error),
      );
    });
    await other.close();
    await locker.close();
    expect(events.some((event) => event.startsWith('lock:lost'))).toBe(true);
    for (const event of events) expect(event).not.toContain(PASSWORD);
    expect(errors).toHaveLength(6);
    for (const error of errors) expect(error).toBeInstanceOf(Error);
    expect(leaking(errors, ['owner-token-Q9Zx', PASSWORD])).toEqual([]);
  });
});
