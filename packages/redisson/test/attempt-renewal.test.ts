import { waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import {
  FairLockProtocol,
  FencedLockProtocol,
  type HashLockProtocol,
  ReadLockProtocol,
  RLockProtocol,
  WriteLockProtocol,
} from '../src/index.js';
import { useRedis } from './helpers/server.js';

const OWNER = '9b3f3c5e-0000-4000-8000-000000000001:7';
/**
 * A re-entry's lease: its latch list lives about this long, and the test waits it out. The holds
 * are taken, and renewed or unlocked, back to back within it: long enough for that on a loaded
 * host (at 300 ms, a stall of the test or of Redis between two of them could end the lock first).
 */
const SHORT = 1_000;
/** The watchdog's lease: the renewal makes the lock outlive the latch list by this much. */
const LONG = 60_000;

/**
 * A re-entry attempt whose reply is lost, then the watchdog's renewal of the outer hold, sent
 * behind it on the same connection, lost too: ioredis resends both once it has reconnected. The
 * renewal landed after the re-entry and made the lock outlive the re-entry's latch list, so a
 * copy landing once the list expired found no latch and counted a second hold, which no handle
 * gives back: the lock outlived the thread's last unlock by a lease, for Java and everyone else.
 * A partial unlock re-applying a longer lease did the same. The copy is sent here as ioredis
 * resends it, with the attempt id of the first sending.
 */
describe('a renewal or a partial unlock keeps the attempt latches of the holds it lengthens', () => {
  const context = useRedis();

  const kinds: [kind: string, protocol: HashLockProtocol, field: string][] = [
    ['RLock', new RLockProtocol(), OWNER],
    ['fenced lock', new FencedLockProtocol(), OWNER],
    ['fair lock', new FairLockProtocol(), OWNER],
    ['write lock', new WriteLockProtocol(), `${OWNER}:write`],
    ['read lock', new ReadLockProtocol(), OWNER],
  ];

  /** Takes `holds` holds of `name` with the attempt ids `a1`, `a2`…, each with a short lease. */
  async function take(protocol: HashLockProtocol, name: string, holds: number) {
    for (let n = 1; n <= holds; n++) {
      const reply = await protocol.acquire(context.redis, name, OWNER, SHORT, { wait: 0, attempt: `a${n}` });
      expect(reply).toMatchObject({ acquired: true, holds: n });
    }
  }

  /** Resends attempt `a2` once the lease it gave its latch list has run out: it must count nothing. */
  async function resendLate(protocol: HashLockProtocol, name: string, field: string, holds: number) {
    const redis: Redis = context.redis;
    const latches = `redisson_lock_attempt:{${name}}:${field}`;
    expect(await redis.pttl(name)).toBeGreaterThan(LONG / 2);
    await waitFor("the re-entry's lease to end", async () => {
      const left = await redis.pttl(latches);
      return left === -2 || left > LONG / 2;
    });
    expect(await redis.hget(name, field)).toBe(String(holds));
    const copy = await protocol.acquire(redis, name, OWNER, SHORT, { wait: 0, attempt: 'a2' });
    expect(copy).toMatchObject({ acquired: true, holds });
    expect(await redis.hget(name, field)).toBe(String(holds));
  }

  it.each(kinds)('%s: a re-entry resent after a renewal counts once', async (kind, protocol, field) => {
    const name = `renewed:${kind}`;
    await take(protocol, name, 2);
    const renewal = [{ resource: name, owner: OWNER, token: String(SHORT) }];
    expect(await protocol.extendMany(context.redis, renewal, LONG)).toEqual([String(SHORT)]);
    await resendLate(protocol, name, field, 2);
  });

  it("write lock: a re-entry resent after the writer's own read acquisition counts once", async () => {
    const name = 'downgraded';
    const write = new WriteLockProtocol();
    await take(write, name, 2);
    const read = await new ReadLockProtocol().acquire(context.redis, name, OWNER, LONG, {
      wait: 0,
      attempt: 'r1',
    });
    expect(read).toMatchObject({ acquired: true, holds: 1 });
    await resendLate(write, name, `${OWNER}:write`, 2);
  });

  it.each(kinds.filter(([kind]) => kind !== 'read lock'))(
    '%s: a re-entry resent after a partial unlock re-applying a longer lease counts once',
    async (kind, protocol, field) => {
      const name = `unlocked:${kind}`;
      await take(protocol, name, 3);
      expect(await protocol.unlock(context.redis, name, OWNER, LONG)).toBe('held');
      await resendLate(protocol, name, field, 2);
    },
  );
});
