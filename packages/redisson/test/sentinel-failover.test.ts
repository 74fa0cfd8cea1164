import { type LostEvent, lockEvents, NotOwnerError } from '@lock/core';
import { waitFor } from '@lock/testing';
import { describe, expect, it } from 'vitest';
import { startPartitionedSentinel } from '../../core/test/scenarios/support/partitioned-sentinel.js';
import { createRedisson } from '../src/index.js';

/**
 * S11 for Redisson's formats, which have no fence counter for the backend to stamp: a hold no
 * replica confirmed is lost with its master, and its holder must learn that at the switch, as a
 * token holder does ('failover'), not at its next renewal a third of the watchdog lease later
 * (100 s here, past the wait below, which would then find it 'taken').
 */
describe('a Sentinel failover under Redisson holds no replica confirmed', () => {
  it("ends each kind's unconfirmed hold with 'failover' once the client reaches the promoted replica", async () => {
    const setup = await startPartitionedSentinel();
    const lost = new Map<string, string>();
    const onLost = (message: unknown) => {
      const event = message as LostEvent;
      lost.set(event.key, event.reason);
    };
    lockEvents.lost.subscribe(onLost);
    try {
      const confirmedRedis = setup.client();
      const confirmed = createRedisson({ redis: confirmedRedis });
      const kept = confirmed.getLock('kept');
      await kept.lock({ threadId: 1 });
      await setup.synced();
      setup.link.blackhole();
      const unconfirmed = createRedisson({
        redis: setup.client(),
        replication: false,
        lockWatchdogTimeout: 300_000,
      });
      const kinds = [
        unconfirmed.getLock('rlock'),
        unconfirmed.getFairLock('fair'),
        unconfirmed.getReadWriteLock('rw').writeLock(),
        unconfirmed.getFencedLock('fenced'),
      ];
      for (const lock of kinds) await lock.lock({ threadId: 1 });
      await setup.master.kill();
      await setup.promoted();
      await waitFor('the unconfirmed holds to be lost', async () => lost.size >= kinds.length);
      expect(Object.fromEntries(lost)).toEqual({
        rlock: 'failover',
        fair: 'failover',
        rw: 'failover',
        fenced: 'failover',
      });
      for (const lock of kinds) await expect(lock.unlock({ threadId: 1 })).rejects.toThrow(NotOwnerError);
      // Confirmed by a replica before the cut: renewed on the new master at once, and kept. Its
      // client reconnects on its own backoff, which may end after the other client's: the check
      // below is of the hold, not of that (its 500 ms command timeout would fail it).
      await waitFor(
        "the holder's client to reach the promoted replica",
        async () => (await confirmedRedis.ping()) === 'PONG',
      );
      expect(await kept.isHeldByCurrentThread({ threadId: 1 })).toBe(true);
      await Promise.all([confirmed.shutdown(), unconfirmed.shutdown()]);
    } finally {
      lockEvents.lost.unsubscribe(onLost);
      await setup.stop();
    }
  }, 60_000);
});
