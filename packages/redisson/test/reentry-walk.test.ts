import { NotOwnerError } from '@lock/core';
import { seededRandom } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisson, type Redisson } from '../src/index.js';
import { RLockProtocol } from '../src/lock/protocol.js';
import { useRedisson } from './helpers/server.js';

const name = 'walk:1';
const channel = 'redisson_lock__channel:{walk:1}';
const LEASE = 30_000;
const MAX_DEPTH = 10;
/** How often a step goes against the excursion's direction: a detour down on the climb, up on the descent. */
const DETOUR = 0.25;

/** The excursion peaks of one walk: every depth 1..10 once, in an order the seed picks. */
function peaks(random: () => number): number[] {
  const order = Array.from({ length: MAX_DEPTH }, (_, i) => i + 1);
  for (let i = order.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return order;
}

/**
 * Safety scenario S3 (reference/safety.md): T1 re-enters an RLock along a random walk of depths
 * 0..10 while two other owners keep trying to take and unlock it: T2, another thread of the same
 * client (`<uuid>:2`), and T2', another client's thread of the same id (`<other uuid>:1`).
 * Fixed seeds replay the same walks every run; one fresh seed per run, named in its test, widens
 * them over time.
 */
describe('S3: re-entry random walk of one owner against two others', () => {
  let redis!: Redis;
  let redisson!: Redisson;
  let other!: Redisson;
  let subscriber!: Redis;
  let messages: string[] = [];
  useRedisson((setup) => {
    ({ redis, redisson } = setup);
    other = createRedisson({ redis: setup.server.client() });
    subscriber = setup.server.client();
  });

  beforeAll(async () => {
    subscriber.on('message', (from: string, message: string) => {
      if (from === channel) messages.push(message);
    });
    await subscriber.subscribe(channel);
  });
  // Before the server stops (hooks run in reverse); its connections close with the server.
  afterAll(() => other.shutdown());

  /** The unlock messages that reached the raw subscriber so far. */
  const published = async () => {
    // A PING on the subscriber answers after every message published before it was sent.
    await subscriber.ping();
    return messages;
  };

  const wire = new RLockProtocol();
  /** Replay a fresh seed's walk by adding it here. */
  const seeds = [1, 42, 20261128, 0xdeadbeef, 7];
  const fresh = Math.floor(Math.random() * 2 ** 32);
  const walks: [seed: number, kind: string][] = [
    ...seeds.map((seed): [number, string] => [seed, 'fixed']),
    [fresh, 'fresh'],
  ];

  it.each(walks)(
    "seed %i (%s): exact hold counts, T2 and T2' powerless, one message per final unlock",
    async (seed) => {
      messages = [];
      const random = seededRandom(seed);
      const t1 = redisson.getLock(name);
      const others = [
        { who: 'T2', lock: redisson.getLock(name), threadId: 2, field: `${redisson.id}:2` },
        { who: "T2'", lock: other.getLock(name), threadId: 1, field: `${other.id}:1` },
      ];
      const owner = `${redisson.id}:1`;
      // Odd seeds let the watchdog keep the lease, even ones give a fixed lease: both paths re-enter.
      const lease = seed % 2 === 1 ? {} : { lease: LEASE };
      let depth = 0;
      let finals = 0;
      let step = 0;
      const at = () => `seed ${seed}, step ${step}, depth ${depth}`;

      /** What Redis must show at `depth`, with `finals` unlock messages published so far. */
      const expectState = async (when: string) => {
        const where = `${at()}, ${when}`;
        expect(await redis.hgetall(name), where).toEqual(depth === 0 ? {} : { [owner]: String(depth) });
        // -2: no key at all at depth 0; a live lease otherwise.
        const [shortest, longest] = depth === 0 ? [-2, -2] : [1, LEASE];
        const pttl = await redis.pttl(name);
        expect(pttl, where).toBeGreaterThanOrEqual(shortest);
        expect(pttl, where).toBeLessThanOrEqual(longest);
        expect(await published(), where).toEqual(Array(finals).fill('0'));
      };

      /**
       * After every step of T1, T2 and T2' each try to take the lock and to unlock it. While T1
       * holds it they are refused with nothing changed; at depth 0 it is really free, so each takes
       * it at once and its unlock is one more message. The client refuses their unlock() before
       * Redis when they hold nothing (no handle), so each also sends the unlock script itself, as a
       * Java peer's unlockAsync(threadId) would: it never frees what it does not hold.
       */
      const othersTry = async () => {
        for (const { who, lock, threadId, field } of others) {
          const free = depth === 0;
          expect(await lock.tryLock({ threadId, lease: LEASE }), `${at()}, ${who} tryLock`).toBe(free);
          expect(await redis.hgetall(name), `${at()}, after ${who} tryLock`).toEqual(
            free ? { [field]: '1' } : { [owner]: String(depth) },
          );
          const unlocked = await lock.unlock({ threadId }).then(
            () => 'unlocked',
            (error: unknown) => error,
          );
          expect(unlocked, `${at()}, ${who} unlock`).toEqual(free ? 'unlocked' : expect.any(NotOwnerError));
          finals += free ? 1 : 0;
          await expectState(`after ${who} unlock`);
          const reply = await wire.release(redis, name, field, String(LEASE));
          expect(reply, `${at()}, ${who} unlock script`).toBe('not-owner');
          await expectState(`after ${who} unlock script`);
        }
      };

      const up = async () => {
        step += 1;
        await t1.lock({ threadId: 1, ...lease });
        depth += 1;
        await expectState('after T1 lock');
        await othersTry();
      };
      const down = async () => {
        step += 1;
        await t1.unlock({ threadId: 1 });
        depth -= 1;
        finals += depth === 0 ? 1 : 0;
        await expectState('after T1 unlock');
        await othersTry();
      };

      for (const peak of peaks(random)) {
        while (depth < peak) {
          if (depth > 1 && random() < DETOUR) await down();
          else await up();
        }
        while (depth > 0) {
          if (depth < MAX_DEPTH && random() < DETOUR) await up();
          else await down();
        }
      }
      expect(finals, at()).toBe(3 * MAX_DEPTH);
    },
  );
});
