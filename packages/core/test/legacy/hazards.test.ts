import { InvalidKeyError, legacyProtocol } from '@lock/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { useRedis } from './fixture.js';
import { OldAlgorithmPeer } from './old-peer.js';

// Each test first shows, as a precondition, a scripted client of the old SETNX + GETSET algorithm
// committing the hazard; then the same situation is given to our protocol, which must not commit it.

const legacy = legacyProtocol({ unit: 'ms', skewMargin: 2_000 });

const t = useRedis();
afterEach(() => {
  vi.useRealTimers();
});

describe('takeover of a live lock by a client whose clock runs ahead', () => {
  it('where the old algorithm hands a live lock to a second client, our side ignores the client clock and refuses it', async () => {
    // Precondition: the old algorithm gives the lock to a client whose clock runs ahead, and the
    // first holder's own check cannot see it: the new value is in its future too.
    const old = new OldAlgorithmPeer(t.redis, 'old', 10_000);
    const oldAhead = new OldAlgorithmPeer(t.redis, 'old', 10_000);
    oldAhead.clockOffset = 20_000;
    expect(await old.tryAcquire()).toBe(true);
    expect(await oldAhead.tryAcquire()).toBe(true);
    expect(await old.stillMine()).toBe(true);

    const holder = new OldAlgorithmPeer(t.redis, 'k', 10_000);
    expect(await holder.tryAcquire()).toBe(true);
    const value = await t.redis.get('k');
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 3_600_000);
    const reply = await legacy.acquire(t.redis, 'k', 'ours', 10_000);
    expect(reply.acquired).toBe(false);
    expect(await t.redis.get('k')).toBe(value);
  });

  it('our side never takes over a key that has a TTL, however stale its value', async () => {
    await t.redis.set('k', String(Date.now() - 3_600_000), 'PX', 5_000);
    const reply = await legacy.acquire(t.redis, 'k', 'ours', 10_000);
    expect(reply).toMatchObject({ acquired: false });
    if (reply.acquired) throw new Error('taken over');
    expect(reply.remaining).toBeGreaterThan(4_000);
    expect(reply.remaining).toBeLessThanOrEqual(5_000);
  });
});

describe('two clients taking over the same stale TTL-less key', () => {
  it('where the old algorithm gives two holders or overwrites the winner, our side lets exactly one of many simultaneous takeovers win and its value stand', async () => {
    // Precondition: with DEL then SETNX (as the docs warn), two clients that both read the stale
    // timestamp before either acts both become holders.
    await t.redis.set('del-setnx', String(Date.now() - 60_000));
    const c1 = new OldAlgorithmPeer(t.redis, 'del-setnx', 10_000);
    const c2 = new OldAlgorithmPeer(t.redis, 'del-setnx', 10_000);
    expect(await c1.stillMine()).toBe(false);
    expect(await c2.stillMine()).toBe(false);
    await c1.del();
    expect(await c1.tryAcquire()).toBe(true);
    await c2.del();
    expect(await c2.tryAcquire()).toBe(true);
    // Precondition: with GETSET, the loser, which read the stale value before the winner's
    // GETSET, overwrites the winner's deadline with its own GETSET.
    await t.redis.set('getset', String(Date.now() - 60_000));
    const oldWinner = new OldAlgorithmPeer(t.redis, 'getset', 10_000);
    const oldLoser = new OldAlgorithmPeer(t.redis, 'getset', 30_000);
    expect(await oldWinner.tryAcquire()).toBe(true);
    const written = await t.redis.get('getset');
    expect(await t.redis.getset('getset', String(oldLoser.now() + 30_001))).toBe(written);
    expect(await t.redis.get('getset')).not.toBe(written);

    await t.redis.set('k', String(Date.now() - 60_000));
    const clients = Array.from({ length: 8 }, () => t.server.client());
    const replies = await Promise.all(clients.map((c, i) => legacy.acquire(c, 'k', `o${i}`, 10_000)));
    const winners = replies.filter((reply) => reply.acquired);
    expect(winners).toHaveLength(1);
    const [winner] = winners;
    if (!winner?.acquired) throw new Error('no winner');
    expect(await t.redis.get('k')).toBe(winner.token);
    expect(await t.redis.pttl('k')).toBeGreaterThan(9_000);
    for (const client of clients) client.disconnect();
  });

  it('our side takes over a TTL-less key only once it is stale past the skew margin', async () => {
    await t.redis.set('k', String(Date.now() - 500));
    expect((await legacy.acquire(t.redis, 'k', 'ours', 10_000)).acquired).toBe(false);
    await t.redis.set('k', String(Date.now() - 10_000));
    expect((await legacy.acquire(t.redis, 'k', 'ours', 10_000)).acquired).toBe(true);
  });
});

describe('check-then-DEL releasing someone else’s lock', () => {
  it('where the old algorithm deletes the lock of the client that took over, our side releases only the value it wrote', async () => {
    // Precondition: A stalls between its check and its DEL; its lock expires, B takes it over,
    // and A's DEL then deletes B's lock.
    const a = new OldAlgorithmPeer(t.redis, 'old', 10_000);
    const oldB = new OldAlgorithmPeer(t.redis, 'old', 10_000);
    expect(await a.tryAcquire()).toBe(true);
    expect(await a.stillMine()).toBe(true);
    oldB.clockOffset = 11_000;
    expect(await oldB.tryAcquire()).toBe(true);
    await a.del();
    expect(await t.redis.exists('old')).toBe(0);

    const ours = await legacy.acquire(t.redis, 'k', 'ours', 10_000);
    if (!ours.acquired) throw new Error('not acquired');
    const b = new OldAlgorithmPeer(t.redis, 'k', 10_000);
    // Further ahead than peerClockAhead (2 s by default), which our value's padding covers.
    b.clockOffset = 13_000;
    expect(await b.tryAcquire()).toBe(true);
    const theirs = await t.redis.get('k');
    expect(await legacy.release(t.redis, 'k', 'ours', ours.token)).toBe('not-owner');
    expect(await legacy.extend(t.redis, 'k', 'ours', ours.token, 10_000)).toBeNull();
    expect(await t.redis.get('k')).toBe(theirs);
  });
});

describe('a peer that deleted our lock and wrote its own with the same timestamp', () => {
  it('our side leaves it alone: release, extension, re-entry and inspect see a foreign lock', async () => {
    // Timestamps in seconds, as the PHP fleet writes them: two writes in one second are equal.
    const seconds = legacyProtocol({ unit: 's' });
    const ours = await seconds.acquire(t.redis, 'k', 'ours', 10_000, {
      wait: 0,
      fresh: false,
      attempt: 'a1',
    });
    if (!ours.acquired) throw new Error('not acquired');
    const value = await t.redis.get('k');
    // A PHP host whose clock ran ahead deleted our live key; a correct one then locked it again
    // within the same second: its value is ours, its TTL its own.
    await t.redis.del('k');
    await t.redis.set('k', value!, 'EX', 4);
    expect(await seconds.release(t.redis, 'k', 'ours', ours.token)).toBe('not-owner');
    expect(await seconds.extend(t.redis, 'k', 'ours', ours.token, 10_000)).toBeNull();
    const again = await seconds.acquire(t.redis, 'k', 'ours', 10_000, {
      wait: 0,
      fresh: false,
      attempt: 'a2',
    });
    expect(again.acquired).toBe(false);
    expect(await seconds.inspect(t.redis, 'k')).toMatchObject({ held: true, owner: null, fence: null });
    expect(await t.redis.get('k')).toBe(value);
    expect(await t.redis.pttl('k')).toBeLessThanOrEqual(4_000);
  });
});

describe('a peer lock named like the counter of earlier versions', () => {
  it('is left alone by our acquire, which folds in only a counter that never expires', async () => {
    const seconds = legacyProtocol({ unit: 's' });
    await t.redis.set('{k}:fence', String(Math.floor(Date.now() / 1000) + 4), 'EX', 4);
    const value = await t.redis.get('{k}:fence');
    const ours = await seconds.acquire(t.redis, 'k', 'ours', 10_000);
    expect(ours.acquired).toBe(true);
    expect(await t.redis.get('{k}:fence')).toBe(value);
  });

  it('is left alone without a TTL too when it is no counter: a timestamp, a fraction, another type; the namespace counter stays whole', async () => {
    const seconds = legacyProtocol({ unit: 's' });
    const now = Math.floor(Date.now() / 1000);
    // A JedisLock-style fleet writes no TTL; a PHP host given a fractional expire writes a fraction.
    const strings = {
      '{a}:fence': String(Date.now() + 60_000),
      '{b}:fence': String(now + 60),
      '{c}:fence': `${now + 4}.5`,
      '{d}:fence': '1e3',
    };
    for (const [name, value] of Object.entries(strings)) await t.redis.set(name, value);
    await t.redis.hset('{e}:fence', 'owner', '1');
    const fences = [];
    for (const name of ['a', 'b', 'c', 'd', 'e', 'f']) {
      const ours = await seconds.acquire(t.redis, name, 'ours', 10_000);
      fences.push(ours.acquired && ours.fence);
    }
    expect(fences).toEqual([1, 2, 3, 4, 5, 6]);
    expect(await t.redis.mget(Object.keys(strings))).toEqual(Object.values(strings));
    expect(await t.redis.hgetall('{e}:fence')).toEqual({ owner: '1' });
  });
});

describe('a key left without a TTL', () => {
  it('where the old algorithm leaves a lock without a TTL, our side sets one on every write: acquire, takeover and extend; bad ttls write nothing', async () => {
    // Precondition: the old algorithm writes no TTL, so a holder that crashed a minute ago blocks
    // its lock until someone takes it over.
    const crashed = new OldAlgorithmPeer(t.redis, 'stale', 10_000);
    crashed.clockOffset = -60_000;
    expect(await crashed.tryAcquire()).toBe(true);
    expect(await t.redis.pttl('stale')).toBe(-1);

    const fresh = await legacy.acquire(t.redis, 'fresh', 'ours', 5_000);
    if (!fresh.acquired) throw new Error('not acquired');
    expect((await legacy.acquire(t.redis, 'stale', 'ours', 5_000)).acquired).toBe(true);
    expect(await legacy.extend(t.redis, 'fresh', 'ours', fresh.token, 7_000)).not.toBeNull();
    await expect(legacy.acquire(t.redis, 'bad', 'ours', 1.5)).rejects.toThrow(/"ttl": 1.5/);
    // Only the shared fence counter and its epoch stamp lack a TTL; the lock keys and their owner
    // records all have one.
    const timed = (await t.redis.keys('*')).filter((key) => !/:fences(:epoch)?$/.test(key));
    expect(timed.sort()).toEqual(['fresh', 'stale', '{fresh}:owner', '{stale}:owner']);
    for (const key of timed) expect(await t.redis.pttl(key)).toBeGreaterThan(0);
  });
});

describe('a peer that broke our lease: deleted our key, or wrote over it and dropped its TTL', () => {
  it('where the old algorithm lets a stalled holder DEL the lock of the client that took over, our other owners still wait for our lease, then take the key', async () => {
    // Precondition: A stalls past its value; B takes the key over; A's check-then-DEL deletes B's,
    // and C then takes the key while B is within the lease it wrote.
    const a = new OldAlgorithmPeer(t.redis, 'old', 10_000);
    const oldB = new OldAlgorithmPeer(t.redis, 'old', 10_000);
    oldB.clockOffset = 11_000;
    expect(await a.tryAcquire()).toBe(true);
    expect(await oldB.tryAcquire()).toBe(true);
    const leaseOfB = Number(await t.redis.get('old'));
    await a.del();
    expect(await new OldAlgorithmPeer(t.redis, 'old', 10_000).tryAcquire()).toBe(true);
    expect(oldB.now()).toBeLessThan(leaseOfB);

    const first = await legacy.acquire(t.redis, 'k', 'first', 10_000);
    if (!first.acquired) throw new Error('not acquired');
    await t.redis.del('k');
    const refused = await legacy.acquire(t.redis, 'k', 'second', 10_000);
    expect(refused).toMatchObject({ acquired: false });
    if (refused.acquired) throw new Error('two owners of ours hold k');
    expect(refused.remaining).toBeGreaterThan(9_000);
    expect(refused.remaining).toBeLessThanOrEqual(10_000);
    expect(await legacy.inspect(t.redis, 'k')).toMatchObject({
      held: true,
      owner: 'first',
      fence: first.fence,
    });

    // The first owner's release gives the lease up (the key is not its to touch): the next owner takes the key.
    expect(await legacy.release(t.redis, 'k', 'first', first.token)).toBe('not-owner');
    expect(await t.redis.exists('{k}:owner')).toBe(0);
    expect((await legacy.acquire(t.redis, 'k', 'second', 10_000)).acquired).toBe(true);
  });

  it('keeps our other owners out until the holder released its last hold, not its first; a copy or an undo of an attempt never applied takes off none', async () => {
    const fresh = { wait: 0, fresh: false };
    const first = await legacy.acquire(t.redis, 'k', 'first', 10_000, { ...fresh, attempt: 'a1' });
    const again = await legacy.acquire(t.redis, 'k', 'first', 10_000, { ...fresh, attempt: 'a2' });
    if (!first.acquired || !again.acquired) throw new Error('not acquired');
    expect(again.holds).toBe(2);
    await t.redis.del('k');
    const keptOut = async () => (await legacy.acquire(t.redis, 'k', 'second', 10_000)).acquired === false;

    expect(await legacy.undo!(t.redis, 'k', 'first', first.token, 'a3')).toBe('not-owner');
    expect(await keptOut()).toBe(true);
    expect(await legacy.release(t.redis, 'k', 'first', again.token, undefined, 'r1')).toBe('not-owner');
    expect(await keptOut()).toBe(true);
    expect(await legacy.release(t.redis, 'k', 'first', again.token, undefined, 'r1')).toBe('not-owner');
    expect(await keptOut()).toBe(true);
    expect(await legacy.release(t.redis, 'k', 'first', first.token, undefined, 'r2')).toBe('not-owner');
    expect((await legacy.acquire(t.redis, 'k', 'second', 10_000)).acquired).toBe(true);
  });

  it('a GETSET that wrote a stale TTL-less value over our key: our other owners wait for our lease, then take the key over', async () => {
    const first = await legacy.acquire(t.redis, 'k', 'first', 10_000);
    if (!first.acquired) throw new Error('not acquired');
    // A GETSET loser wrote its value over ours (dropping the TTL), and that value is long past.
    await t.redis.getset('k', String(Date.now() - 60_000));
    const refused = await legacy.acquire(t.redis, 'k', 'second', 10_000);
    expect(refused).toMatchObject({ acquired: false });
    if (refused.acquired) throw new Error('two owners of ours hold k');
    expect(refused.remaining).toBeGreaterThan(9_000);
    expect(await legacy.inspect(t.redis, 'k')).toMatchObject({ held: true, owner: 'first' });

    expect(await legacy.release(t.redis, 'k', 'first', first.token)).toBe('not-owner');
    expect((await legacy.acquire(t.redis, 'k', 'second', 10_000)).acquired).toBe(true);
    expect(await t.redis.pttl('k')).toBeGreaterThan(9_000);
  });
});

describe('a lock written in the other unit (a fleet in seconds read in ms, or the reverse)', () => {
  it('where an ms reader takes a live lock in seconds for long stale, our side refuses the key with InvalidKeyError and writes nothing', async () => {
    // Precondition: the SETNX page's client writes seconds; JedisLock's (ms) reads it as 1970.
    const now = Math.floor(Date.now() / 1000);
    await t.redis.set('seconds', String(now + 31));
    const jedis = new OldAlgorithmPeer(t.redis, 'seconds', 10_000);
    expect(await jedis.tryAcquire()).toBe(true);

    await t.redis.set('k', String(now + 31));
    await expect(legacy.acquire(t.redis, 'k', 'ours', 10_000)).rejects.toThrow(
      /holds a timestamp in seconds, not in milliseconds/,
    );
    await expect(legacy.inspect(t.redis, 'k')).rejects.toThrow(InvalidKeyError);
    expect(await t.redis.get('k')).toBe(String(now + 31));
    expect(await t.redis.exists('{k}:owner')).toBe(0);
  });

  it('a stale lock in ms read in seconds is refused too, not waited for until the year 50 000', async () => {
    const seconds = legacyProtocol({ unit: 's' });
    await t.redis.set('k', String(Date.now() - 60_000));
    await expect(seconds.acquire(t.redis, 'k', 'ours', 10_000)).rejects.toThrow(
      /holds a timestamp in milliseconds, not in seconds/,
    );
    expect(await t.redis.pttl('k')).toBe(-1);
  });
});
