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
});
