import { createLocker, type Lock } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { controlRenewals, renewals as renewalsSeen } from '../support/renewals.js';

async function evalCalls(server: RedisServer): Promise<number> {
  const stats = await server.client().info('commandstats');
  return [...stats.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)].reduce(
    (sum, m) => sum + Number(m[1]),
    0,
  );
}

describe('the watchdog', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server.stop());

  it('renews 2 000 held locks in a few batched scripts per interval, and stops at release', async () => {
    // 2 000 releases sent at once can take longer than the default 500 ms on a loaded machine.
    const locker = createLocker({ redis: server.client(), ttl: 1_500, commandTimeout: 5_000 });
    const locks: Lock[] = [];
    for (let i = 0; i < 2_000; i++) locks.push(await locker.acquire(`held:${i}`));
    const before = await evalCalls(server);
    // Two rounds: every lock renewed twice (one round every ttl/3 = 500 ms).
    await renewalsSeen(2 * locks.length);
    const renewals = (await evalCalls(server)) - before;
    expect(renewals).toBeGreaterThan(0);
    expect(renewals).toBeLessThanOrEqual(30);
    expect(locks.every((lock) => !lock.signal.aborted)).toBe(true);
    expect(await server.client().pttl('{lock:held:0}')).toBeGreaterThan(0);
    await Promise.all(locks.map((lock) => lock.release()));
    // Every round from now on is a control lock's alone: a released lock still renewed would
    // join one of them (all share the ttl) or send its own.
    expect(await controlRenewals(locker, 2)).toEqual([1, 1]);
    await locker.close();
  });

  it('never resurrects a lock deleted behind its back, and reports it lost', async () => {
    const redis = server.client();
    // The first renewal (a third of the lease on) finds the key gone: 'taken'. A lease long enough
    // that a loaded host's stall does not end it first ('expired', which is not the case here).
    const locker = createLocker({ redis, ttl: 3_000 });
    const lock = await locker.acquire('deleted');
    await redis.del('{lock:deleted}');
    await new Promise((resolve) => lock.signal.addEventListener('abort', resolve, { once: true }));
    expect((lock.signal.reason as { reason: string }).reason).toBe('taken');
    expect(await redis.exists('{lock:deleted}')).toBe(0);
    await locker.close();
  });

  it('renews a fixed-lease hold only while a re-entry that asked for renewal holds it', async () => {
    const redis = server.client();
    // Leases a loaded host's stalls do not end while the re-entry renews them (a loss there would
    // leave the renewals below waited for forever); the fixed one ends within a lease of the
    // re-entry's release, later than the two renewals a watchdog still renewing it would send.
    const ttl = 1_500;
    const locker = createLocker({ redis, ttl });
    const outcome = await locker.using('fixed', { ttl, rejectOnLoss: false }, async (outer) => {
      // Nested without a ttl: renewed, at the locker's ttl (a third of it apart).
      const inner = await locker.acquire('fixed');
      expect(inner.holds).toBe(2);
      await renewalsSeen(2, 'fixed');
      await inner.release();
      // The outer acquisition asked for a fixed lease: it ends, unless the watchdog still renews.
      const ended = new Promise((resolve) =>
        outer.signal.addEventListener('abort', () => resolve(outer.signal.reason), { once: true }),
      );
      return Promise.race([ended, renewalsSeen(2, 'fixed').then(() => 'renewed after the re-entry')]);
    });
    expect(outcome).toMatchObject({ reason: 'expired' });
    expect(await redis.exists('{lock:fixed}')).toBe(0);
    await locker.close();
  });

  it('leaves nothing that keeps a process alive after close()', async () => {
    const { spawn } = await import('node:child_process');
    const { fileURLToPath } = await import('node:url');
    const register = fileURLToPath(new URL('../../../../tooling/register.mjs', import.meta.url));
    const script = fileURLToPath(new URL('../support/cycles.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', register, script, server.url], { stdio: 'pipe' });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      child.once('exit', (exitCode) => {
        clearTimeout(timer);
        resolve(exitCode);
      });
    });
    expect(output).toContain('1000 cycles done');
    expect(code).toBe(0);
  }, 30_000);
});
