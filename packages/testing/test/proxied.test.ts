import { describe, expect, it } from 'vitest';
import { freePort, proxiedClient, waitFor } from '../src/index.js';
import { useRedis } from '../src/vitest/index.js';

async function elapsed(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

describe('proxiedClient', () => {
  it('returns a connected client whose commands reach the server through the proxy', async () => {
    const server = await useRedis();
    await using link = await proxiedClient(server);
    expect(link.redis.status).toBe('ready');
    expect(link.redis.options.port).toBe(link.proxy.port);
    expect(link.proxy.target).toEqual({ host: server.host, port: server.port });
    expect(link.proxy.connections).toBe(1);
    await link.redis.set('through', 'proxy');
    expect(await server.client().get('through')).toBe('proxy');
  });

  it('passes its ioredis options on: a blackholed command times out, and answers after pass()', async () => {
    const server = await useRedis();
    await using link = await proxiedClient(server, { redis: { commandTimeout: 200 } });
    link.proxy.blackhole();
    await expect(link.redis.set('held', '1')).rejects.toThrow(/timed out/);
    // The request was held, not lost: it lands once the partition heals.
    expect(await server.client().get('held')).toBeNull();
    link.proxy.pass();
    expect(await link.redis.ping()).toBe('PONG');
    expect(await server.client().get('held')).toBe('1');
  });

  it('answers late while the proxy delays replies', async () => {
    const server = await useRedis();
    await using link = await proxiedClient(server);
    link.proxy.delay({ downstream: 300 });
    expect(await elapsed(() => link.redis.ping())).toBeGreaterThanOrEqual(290);
    // A delay far beyond the bound below, so that a slow machine cannot be mistaken for one kept.
    link.proxy.delay({ downstream: 10_000 });
    link.proxy.pass();
    expect(await elapsed(() => link.redis.ping())).toBeLessThan(5_000);
  });

  it('close() disconnects the client and stops the proxy, leaving the server running', async () => {
    const server = await useRedis();
    const link = await proxiedClient(server);
    await link.close();
    await link.close();
    await expect(link.redis.ping()).rejects.toThrow(/Connection is closed/);
    await waitFor('the client to end', async () => link.redis.status === 'end', { timeout: 2_000 });
    expect(link.proxy.connections).toBe(0);
    expect(() => link.proxy.pass()).toThrow(/stopped/);
    expect(server.running).toBe(true);
    expect(await server.client().ping()).toBe('PONG');
  });

  it('rejects, and stops its proxy, when the target does not answer', async () => {
    const target = { host: '127.0.0.1', port: await freePort() };
    const listeners = () =>
      process.getActiveResourcesInfo().filter((name) => name === 'TCPServerWrap').length;
    const before = listeners();
    const failed = proxiedClient(target, { redis: { retryStrategy: () => null, maxRetriesPerRequest: 0 } });
    await expect(failed).rejects.toThrow();
    // The proxy's listener is closed: nothing it started keeps the process busy.
    await waitFor('the proxy listener to close', async () => listeners() <= before, { timeout: 2_000 });
  });
});
