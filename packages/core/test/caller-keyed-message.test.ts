import { createLocker, InvalidKeyError } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { thrown } from './support/settle.js';

// An error message shows a key the way it shows any value: clipped past 80 characters, quotes
// escaped. Renamed to the caller's key, the message must name that key the same way, not keep
// the Redis resource (the key with the locker's prefix) while `.key` is the caller's.
describe("a backend's error shown clipped or escaped names the caller's key", () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server.stop());

  /** What acquiring `key` rejects with, on a locker whose resources are `app:` + key. */
  async function refusal(key: string): Promise<InvalidKeyError> {
    const locker = createLocker({ redis: server.client(), prefix: 'app:' });
    const error = await thrown(locker.acquire(key, { wait: 0 }));
    await locker.close();
    expect(error).toBeInstanceOf(InvalidKeyError);
    return error as InvalidKeyError;
  }

  it('a key over 80 characters', async () => {
    // The name of the token format's queue key for a long lock name: refused by the protocol.
    const key = `{${'x'.repeat(90)}}:queue`;
    const error = await refusal(key);
    expect(error.key).toBe(key);
    expect(error.message).toBe(`invalid lock key "${key.slice(0, 80)}…": ${error.reason}`);
    expect(error.stack).toContain(error.message);
  });

  it('a key with a double quote', async () => {
    const key = '{or"ders}:queue';
    const error = await refusal(key);
    expect(error.key).toBe(key);
    expect(error.message).toBe(`invalid lock key "{or\\"ders}:queue": ${error.reason}`);
    expect(error.stack).toContain(error.message);
  });

  it('a key that fits and needs no escaping is renamed as before', async () => {
    const error = await refusal('{orders}:queue');
    expect(error.message).toBe(`invalid lock key "{orders}:queue": ${error.reason}`);
  });
});
