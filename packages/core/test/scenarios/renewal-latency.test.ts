import { createLocker } from '@lock/core';
import { checkHistory, HistoryRecorder, startProxy, startRedis } from '@lock/testing';
import { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { renewals } from '../support/renewals.js';
import { reportFigures } from './support/figures.js';
import { rounds, timeLimit } from './support/tier.js';

// A renewal sent 400 ms into the lease and answered after a 300 ms round trip lands 500 ms before
// the lease ends: room for the stalls of a loaded 2-core host.
const TTL = 1_200;
const ROUNDS = rounds(2, 20);

/**
 * S21: a renewed lock (ttl 1 200 ms, renewed every 400 ms) whose connection slows down. With a
 * round trip well inside the ttl the lock stays held; once a round trip outlasts the ttl the
 * renewals cannot keep up, and the holder must learn it lost the lock (its signal aborts) before
 * B, waiting on a direct connection, gets it.
 */
it(
  `S21: renewals under growing latency, ${ROUNDS} rounds: held while they keep up, lost before B acquires once they cannot`,
  async () => {
    await using server = await startRedis();
    await using proxy = await startProxy({ target: server });
    const slow = new Redis(proxy.redisOptions);
    slow.on('error', () => {});
    await slow.ping();
    const a = createLocker({ redis: slow, ttl: TTL, replication: false });
    const b = createLocker({ redis: server.client(), replication: false });
    const margins: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      proxy.pass();
      const recorderA = new HistoryRecorder('A');
      const recorderB = new HistoryRecorder('B');
      const key = `s21:${round}`;
      const lock = await a.acquire(key);
      recorderA.acquired(lock, { renewed: true });
      const lost = new Promise<bigint>((resolve) =>
        lock.signal.addEventListener('abort', () => resolve(recorderA.lost(lock).at), { once: true }),
      );
      // The first renewal also loads its script (a second round trip): let it happen before the delay.
      await renewals(1, key);
      proxy.delay(150);
      // Five renewals at a 300 ms round trip, sent a third of the lease apart, outlast the lease:
      // each lands well inside it. A loss ends the wait at once.
      await Promise.race([renewals(5, key), lost]);
      expect(lock.signal.reason).toBeUndefined();
      proxy.delay(700);
      const lockB = await b.acquire(key, { ttl: 5_000, wait: 10_000 });
      const taken = recorderB.acquired(lockB).at;
      const lostAt = await lost;
      margins.push(Number(taken - lostAt) / 1e6);
      const verdict = checkHistory([...recorderA.events, ...recorderB.events]);
      expect(verdict.overlaps).toEqual([]);
      await lockB.release();
      await lock.release();
    }
    reportFigures('S21', { rounds: ROUNDS, 'min abort-before-B margin ms': Math.min(...margins) });
    await a.close();
    await b.close();
    slow.disconnect();
  },
  timeLimit(30_000, 300_000),
);
