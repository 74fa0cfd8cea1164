import { createLocker, InvalidKeyError, legacyProtocol } from '@lock/core';
import { describe, expect, it } from 'vitest';
import { useRedis } from './fixture.js';

// A legacy lock keeps its name's exact bytes and wraps a name without a tag for its side keys:
// `x` has its owner record at `{x}:owner`, where the name `{x}`, its own tag, would keep its
// record too. Sharing it, the second lock overwrote the first's record, whose holder then lost
// a lock still held in its name (renewal: LockLostError "taken"; release: nothing deleted, the
// key left to its TTL). Off a cluster such a name is refused; on one, `x` is refused for want of
// a tag, so `{x}` has no partner and is taken (see cluster.test.ts).

const t = useRedis();

const REASON =
  'off a cluster, a lock key (prefix included) that is one whole {hash tag} shares its owner record and release channel with the same key without the braces; add something outside them, e.g. ":lock"';

/** The error `run` throws or rejects with. */
async function refusal(run: () => unknown): Promise<InvalidKeyError> {
  try {
    await run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidKeyError);
    return error as InvalidKeyError;
  }
  throw new Error('not refused');
}

describe('a name that is one whole hash tag', () => {
  const legacy = legacyProtocol({ unit: 'ms' });

  it('is refused (acquire and inspect) while x is held, before any write, and the holder of x keeps, renews and releases it', async () => {
    const locker = createLocker({ redis: t.redis, protocol: legacy, prefix: '' });
    const a = await locker.acquire('x', { ttl: 20_000, renew: false });
    const before = (await t.redis.keys('*')).sort();
    const refused = locker.acquire('{x}', { ttl: 20_000 });
    await expect(refused).rejects.toThrow(InvalidKeyError);
    await expect(refused).rejects.toThrow(`invalid lock key "{x}": ${REASON}`);
    // Nor is it inspected: its side keys are x's, whose holder it would report as its own.
    await expect(locker.inspect('{x}')).rejects.toThrow(`invalid lock key "{x}": ${REASON}`);
    await expect(locker.isLocked('{x}')).rejects.toThrow(InvalidKeyError);
    expect((await t.redis.keys('*')).sort()).toEqual(before);
    expect(await t.redis.hget('{x}:owner', 'owner')).toBe(a.owner);
    await a.extend(30_000);
    expect(await t.redis.pttl('x')).toBeGreaterThan(29_000);
    await a.release();
    expect(await t.redis.exists('x', '{x}:owner')).toBe(0);
    await locker.close();
  });

  it('off a cluster is refused by validate and by acquire with nothing written; on a cluster validate takes it', async () => {
    for (const name of ['{x}', '{lock_goods}', '{a}b}', '{x}}', '{{}}']) {
      expect(() => legacy.validate(name, false)).toThrow(InvalidKeyError);
      expect(() => legacy.validate(name, true)).not.toThrow();
      await expect(legacy.acquire(t.redis, name, 'a', 3_000)).rejects.toThrow(
        `invalid lock key ${JSON.stringify(name)}: ${REASON}`,
      );
    }
    expect(await t.redis.keys('*')).toEqual([]);
  });

  it('gives a reason without any part of the key, however long', async () => {
    const long = `{${'k'.repeat(4_000)}}`;
    for (const name of ['{lock_goods}', long]) {
      const error = await refusal(() => legacy.validate(name, false));
      expect(error.key).toBe(name);
      expect(error.reason).toBe(REASON);
      expect(error.reason).not.toContain('lock_goods');
      expect(error.reason).not.toContain('kk');
    }
    // The message shows the key clipped, not 8 KB of it.
    const error = await refusal(() => legacy.validate(long, false));
    expect(error.message.length).toBeLessThan(400);
  });

  it('is refused when the prefix makes the key one whole tag, naming only the caller key', async () => {
    const locker = createLocker({ redis: t.redis, protocol: legacy, prefix: '{app}:' });
    const error = await refusal(() => locker.acquire('x}', { ttl: 3_000 }));
    expect(error.key).toBe('x}');
    expect(error.message).toBe(`invalid lock key "x}": ${REASON}`);
    expect(error.reason).not.toContain('app}');
    expect(await t.redis.keys('*')).toEqual([]);
    await locker.close();
  });

  it('leaves the keys of other names as they were: untagged names wrap, tagged ones keep their bytes', async () => {
    for (const [name, record] of [
      ['lock_goods_300', '{lock_goods_300}'],
      ['{lock_goods}:300', '{lock_goods}:300'],
      ['{x}:lock', '{x}:lock'],
      ['a{x}', 'a{x}'],
      ['{{x}}', '{{x}}'],
      ['{}', '{{}}'],
    ] as const) {
      expect(legacy.channel(name, 'w')).toBe(`${record}:released`);
      expect(await legacy.acquire(t.redis, name, 'a', 3_000)).toMatchObject({ acquired: true, holds: 1 });
      expect(await t.redis.exists(name)).toBe(1);
      expect(await t.redis.hget(`${record}:owner`, 'owner')).toBe('a');
    }
  });
});
