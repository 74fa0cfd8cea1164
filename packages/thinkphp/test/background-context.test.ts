import { AsyncLocalStorage } from 'node:async_hooks';
import { type RedisServer, startRedis, waitFor } from '@lock/testing';
import { Lock, parseThinkEnv } from '@lock/thinkphp';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';

/**
 * The connection of `{ env }` locks is opened by the first such lock, inside whatever request
 * makes it. It outlives that request: what it sends by itself later (the ready check after a
 * reconnect) must not run in the request's async context (AsyncLocalStorage, and so a tracer's
 * active span).
 */
describe('the env connection opened inside a request', () => {
  let server: RedisServer;
  let admin: Redis;
  beforeAll(async () => {
    server = await startRedis();
    admin = server.client();
  });
  afterAll(async () => {
    await Lock.disconnect();
    admin.disconnect();
    await server.stop();
  });

  it('reconnects outside that request’s async context', async () => {
    const request = new AsyncLocalStorage<string>();
    // Every command but the test's own, with the request it was sent in.
    const sent: { name: string; request: string | undefined }[] = [];
    const { sendCommand } = Redis.prototype;
    Redis.prototype.sendCommand = function (this: Redis, command, stream) {
      if (this !== admin) sent.push({ name: command.name, request: request.getStore() });
      return sendCommand.call(this, command, stream);
    } as typeof sendCommand;
    onTestFinished(() => {
      Redis.prototype.sendCommand = sendCommand;
    });

    const env = parseThinkEnv(`[REDIS]\nHOST = 127.0.0.1\nPORT = ${server.port}\n`, '.env', {});
    await request.run('request A', async () => {
      const lock = new Lock('lock_goods:300', { env });
      expect(await lock.lock()).toBe(true);
      await lock.unlock();
    });
    expect(sent.map((command) => command.request)).toContain('request A');

    const from = sent.length;
    await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    await waitFor('the env connection to reconnect', async () =>
      sent.slice(from).some((command) => command.name === 'info'),
    );
    expect(sent.slice(from).filter((command) => command.request === 'request A')).toEqual([]);
  });
});
