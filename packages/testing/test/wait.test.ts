import { describe, expect, it } from 'vitest';
import { waitFor } from '../src/index.js';
import { useRedis } from '../src/vitest/index.js';

describe('waitFor', () => {
  it('gives up at its deadline while a check is still pending, naming what and the last error', {
    // The deadline is the point: a waitFor that awaits the pending check never ends.
    timeout: 10_000,
  }, async () => {
    const server = await useRedis();
    // No commandTimeout: a command to a paused server never settles.
    const redis = server.client();
    await redis.rpush('k', 'a list');
    // Each check leaves the server paused: the first fails (WRONGTYPE), the next never answers.
    const waiting = waitFor(
      'k to read v',
      async () => (await redis.get('k').finally(() => server.pause())) === 'v',
      { timeout: 1_000 },
    );
    await expect(waiting).rejects.toThrow(
      /^timed out after 1000 ms waiting for k to read v \(the last check had not answered; last error: WRONGTYPE/,
    );
  });

  it('says when the last answer was false, not only what an earlier check threw', async () => {
    let checks = 0;
    const waiting = waitFor(
      'the replica to sync',
      async () => {
        checks += 1;
        if (checks === 1) throw new Error('LOADING');
        return false;
      },
      { timeout: 300, interval: 10 },
    );
    await expect(waiting).rejects.toThrow(
      'timed out after 300 ms waiting for the replica to sync (the last answer was false; an earlier check threw: LOADING)',
    );
    expect(checks).toBeGreaterThan(1);
  });

  it('names a thrown value that is not an Error', async () => {
    await expect(
      waitFor(
        'x',
        async () => {
          throw 'no route';
        },
        { timeout: 50 },
      ),
    ).rejects.toThrow('timed out after 50 ms waiting for x (last error: no route)');
  });

  it('refuses a timeout or interval that is not a finite number >= 0, naming it, before any check', async () => {
    let checks = 0;
    const check = async () => {
      checks += 1;
      return true;
    };
    await expect(waitFor('x', check, { timeout: Number.NaN })).rejects.toThrow(
      new RangeError('timeout must be a finite number >= 0, got NaN'),
    );
    await expect(waitFor('x', check, { interval: -1 })).rejects.toThrow(
      new RangeError('interval must be a finite number >= 0, got -1'),
    );
    expect(checks).toBe(0);
  });
});
