import { LockUnavailableError } from '@lock/core';
import { type ProxiedClient, proxiedClient, type RedisServer, startRedis, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { expect, it } from 'vitest';
import { createRedisson, type Redisson, type RedissonOptions } from '../src/index.js';
import { fairTimeouts } from '../src/names.js';
import { recordScriptCommands } from './helpers/observe.js';

/** Where an option's check looks: the client made, its server, and a connection of the test's own to it. */
interface Setup {
  readonly redisson: Redisson;
  readonly server: RedisServer;
  readonly admin: Redis;
  /** The client `redisson` locks with, through a proxy that can hold the server's replies. */
  readonly proxied: ProxiedClient;
}

type OptionName = Exclude<keyof RedissonOptions, 'redis' | 'pubSub'>;

/**
 * One option: the value `createRedisson` is given, another valid one the caller's object answers
 * later, and a check that the given one is in force (seen in Redis, or in what the client does),
 * which the later one fails.
 */
interface OptionCase {
  readonly name: OptionName;
  readonly given: unknown;
  readonly later: unknown;
  inForce(setup: Setup): Promise<void>;
}

/** `WAIT` commands the server runs, each as [replicas, timeout]; `take()` answers those run so far. */
async function recordWaits(admin: Redis): Promise<{ take(): Promise<string[][]>; stop(): void }> {
  const monitor = await admin.monitor();
  const seen: string[][] = [];
  let reached: (() => void) | undefined;
  monitor.on('monitor', (_time: string, args: string[]) => {
    const command = args[0]!.toLowerCase();
    if (command === 'wait') seen.push(args.slice(1));
    if (command === 'echo' && args[1] === 'waits-marker') reached?.();
  });
  return {
    // MONITOR reports commands in execution order: once our ECHO shows up, every earlier WAIT has.
    async take() {
      const marker = new Promise<void>((resolve) => {
        reached = resolve;
      });
      await admin.echo('waits-marker');
      await marker;
      return [...seen];
    },
    stop: () => monitor.disconnect(),
  };
}

/** Acquire-script runs the server has answered so far (any client's). */
async function scriptRuns(admin: Redis): Promise<number> {
  const stats = await admin.info('commandstats');
  const calls = (command: string) =>
    Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  return calls('eval') + calls('evalsha');
}

const CASES: OptionCase[] = [
  {
    name: 'prefix',
    given: 'app:',
    later: 'other:',
    async inForce({ redisson, admin }) {
      const lock = redisson.getLock('snapshot');
      await lock.lock({ threadId: 1 });
      expect(await admin.type('app:snapshot')).toBe('hash');
      expect(await admin.keys('*other:*')).toEqual([]);
      await lock.unlock({ threadId: 1 });
    },
  },
  {
    name: 'lockWatchdogTimeout',
    given: 600_000,
    later: 60_000,
    async inForce({ redisson, admin }) {
      const commands = await recordScriptCommands(admin);
      try {
        const lock = redisson.getLock('snapshot');
        await lock.lock({ threadId: 1 });
        expect(await commands.take()).toContainEqual(['pexpire', 'snapshot', '600000']);
        await lock.unlock({ threadId: 1 });
      } finally {
        commands.stop();
      }
    },
  },
  {
    name: 'fairLockWaitTimeout',
    given: 200_000,
    later: 100_000,
    async inForce({ redisson, admin }) {
      const lock = redisson.getFairLock('snapshot');
      const lease = 10_000;
      await lock.lock({ threadId: 1, lease });
      // A waiter queues with the holder's remaining lease plus the allowance after its clock's now.
      const before = Date.now();
      const waiting = lock.lock({ threadId: 2 });
      let deadline: string | null = null;
      try {
        await waitFor('the waiter to queue', async () => {
          deadline = await admin.zscore(fairTimeouts('snapshot'), `${redisson.id}:2`);
          return deadline !== null;
        });
      } finally {
        await lock.unlock({ threadId: 1 });
        await waiting;
      }
      const after = Date.now();
      expect(Number(deadline) - before).toBeGreaterThanOrEqual(200_000);
      expect(Number(deadline) - after).toBeLessThanOrEqual(200_000 + lease);
      await lock.unlock({ threadId: 2 });
    },
  },
  {
    name: 'commandTimeout',
    given: 200,
    later: 300,
    async inForce({ redisson, proxied }) {
      const lock = redisson.getLock('snapshot');
      // The server's replies held, both values time out: the engine's acquire and this package's
      // own call each say which one bounded them.
      proxied.proxy.delay({ downstream: 60_000 });
      try {
        for (const call of [() => lock.tryLock({ threadId: 1 }), () => lock.remainTimeToLive()]) {
          const failure = await call().then(
            () => undefined,
            (error: unknown) => error,
          );
          expect(failure).toBeInstanceOf(LockUnavailableError);
          expect((failure as Error).cause).toMatchObject({ name: 'CommandTimeoutError', timeout: 200 });
        }
      } finally {
        proxied.proxy.pass();
      }
    },
  },
  {
    name: 'retry',
    given: { base: 5, max: 5, jitter: 0 },
    later: { base: 60_000, max: 60_000, jitter: 0 },
    async inForce({ redisson, admin }) {
      const lock = redisson.getLock('snapshot');
      // Never expiring while the test runs, nor released with a message: only polling finds it.
      await lock.lock({ threadId: 1, lease: 600_000 });
      const before = await scriptRuns(admin);
      const waiting = lock.lock({ threadId: 2 });
      try {
        // Every 5 ms the given backoff polls again; the later one would wait a minute after its second try.
        await waitFor('the waiter to poll ten times', async () => (await scriptRuns(admin)) >= before + 10, {
          timeout: 10_000,
        });
      } finally {
        await lock.unlock({ threadId: 1 });
        await waiting;
      }
      await lock.unlock({ threadId: 2 });
    },
  },
  {
    name: 'replication',
    given: { replicas: 1, timeout: 5_000 },
    // As many replicas as the server has: locking with the later value works, only its WAIT differs.
    later: { replicas: 1, timeout: 60_000 },
    async inForce({ redisson, server, admin }) {
      await using replica = await startRedis({ config: { replicaof: `${server.host} ${server.port}` } });
      await waitFor('the replica to be in sync', async () =>
        (await replica.client().info('replication')).includes('master_link_status:up'),
      );
      const waits = await recordWaits(admin);
      try {
        const lock = redisson.getLock('snapshot');
        await lock.lock({ threadId: 1 });
        expect(await waits.take()).toEqual([['1', '5000']]);
        await lock.unlock({ threadId: 1 });
      } finally {
        waits.stop();
      }
    },
  },
];

/** `target` with a field `name` that answers `first` to its first read and `later` to every later one. */
function changingOnRead<T extends object>(target: T, name: string, first: unknown, later: unknown): T {
  let reads = 0;
  return Object.defineProperty(target, name, {
    enumerable: true,
    get: () => (++reads === 1 ? first : later),
  });
}

/** An options object given to `createRedisson`, and what the caller does to it once created. */
interface Given {
  readonly options: RedissonOptions;
  afterCreation(): void;
}

/** One way a caller's options object may answer `later` after `createRedisson` checked `given`. */
interface Way {
  readonly way: string;
  /** Whether it needs an object value (`retry`, `replication`), whose fields it changes. */
  readonly fields: boolean;
  give(redis: Redis, option: OptionCase): Given;
}

const unchanged = () => {};

/**
 * A plain object written to after creation (a lock kind's engine is made only at its first
 * lock), or getters (a Proxy alike) answering the check one value and a later read another.
 */
const WAYS: Way[] = [
  {
    way: 'replaced after creation',
    fields: false,
    give(redis, { name, given, later }) {
      const options: Record<string, unknown> = { redis, [name]: given };
      const afterCreation = () => {
        options[name] = later;
      };
      return { options: options as unknown as RedissonOptions, afterCreation };
    },
  },
  {
    way: 'changed in place after creation',
    fields: true,
    give(redis, { name, given, later }) {
      const value = { ...(given as object) };
      return {
        options: { redis, [name]: value } as RedissonOptions,
        afterCreation: () => {
          Object.assign(value, later);
        },
      };
    },
  },
  {
    way: 'a getter answering it after the first read',
    fields: false,
    give: (redis, { name, given, later }) => ({
      options: changingOnRead({ redis }, name, given, later) as RedissonOptions,
      afterCreation: unchanged,
    }),
  },
  {
    way: 'getters of its fields answering it after their first read',
    fields: true,
    give(redis, { name, given, later }) {
      const value = {};
      for (const [field, first] of Object.entries(given as object)) {
        changingOnRead(value, field, first, (later as Record<string, unknown>)[field]);
      }
      return { options: { redis, [name]: value } as RedissonOptions, afterCreation: unchanged };
    },
  },
];

const TABLE = CASES.flatMap((option) =>
  WAYS.filter(({ fields }) => !fields || typeof option.given === 'object').map(
    (way) => [option.name, way.way, option, way] as const,
  ),
);

/**
 * The value `createRedisson` checked is the one every lock kind locks with, read once: an
 * implementation reading the caller's object again (at a kind's first lock, or after the check)
 * would lock with the later value, and the option's check sees which.
 */
it.each(TABLE)(
  '%s: locks with the value createRedisson checked when the options object answers another one, %s',
  async (_name, _way, option, way) => {
    await using server = await startRedis();
    await using proxied = await proxiedClient(server);
    const given = way.give(proxied.redis, option);
    const redisson = createRedisson(given.options);
    try {
      given.afterCreation();
      await option.inForce({ redisson, server, admin: server.client(), proxied });
    } finally {
      await redisson.shutdown();
    }
  },
  30_000,
);
