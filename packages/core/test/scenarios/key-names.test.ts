import {
  createLocker,
  hashTag,
  InvalidKeyError,
  type Lock,
  type Locker,
  legacyProtocol,
  slotKey,
} from '@lock/core';
import { type RedisCluster, type RedisServer, startCluster, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { callsBetween, commandCalls } from '../faults/support/stats.js';
import { AWKWARD_NAMES, HUGE_NAME } from './support/awkward-names.js';
import { reportFigures } from './support/figures.js';

/** Where a run of S25 stores its locks: a single server, or every master of a cluster. */
interface Deployment {
  /** What the lockers use: a `Redis`, or a `Cluster`. */
  readonly redis: Parameters<typeof createLocker>[0]['redis'];
  /** One direct connection per server holding keys (each master of a cluster). */
  readonly servers: readonly Redis[];
}

/** The key each protocol stores for a name (the locker's default prefix `lock:`): token also wraps it in a hash tag. */
interface ProtocolRun {
  readonly name: string;
  readonly options: object;
  /** The names this run locks (legacy on a cluster: each behind a `{s25}` hash tag, which it requires). */
  readonly names: readonly string[];
  readonly keyOf: (name: string) => string;
}

const tokenRun: ProtocolRun = {
  name: 'token',
  options: {},
  names: AWKWARD_NAMES,
  keyOf: (name) => slotKey(`lock:${name}`)!,
};
const legacyRun = (names: readonly string[]): ProtocolRun => ({
  name: 'legacy',
  options: { protocol: 'legacy' },
  names,
  keyOf: (name) => `lock:${name}`,
});

async function keyBytes(deployment: Deployment): Promise<string[]> {
  const keys = await Promise.all(deployment.servers.map((server) => server.keysBuffer('*')));
  return keys.flat().map((key) => key.toString('hex'));
}

async function keyCount(deployment: Deployment): Promise<number> {
  const sizes = await Promise.all(deployment.servers.map((server) => server.dbsize()));
  return sizes.reduce((sum, size) => sum + size, 0);
}

/** The S25 checks of one protocol on one deployment. */
function describeKeyNames(topology: string, deployment: () => Deployment, run: ProtocolRun): void {
  describe(`S25: key names on ${topology}, ${run.name} protocol`, () => {
    let locker: Locker;
    beforeAll(() => {
      locker = createLocker({ redis: deployment().redis, ...run.options });
      return () => locker.close();
    });

    it('stores every name literally, keeps look-alikes apart, interprets no glob and injects no command', async () => {
      const { redis, servers } = deployment();
      await Promise.all(servers.map((server) => server.flushdb()));
      await redis.set('canary', 'alive');
      const before = await Promise.all(servers.map((server) => commandCalls(server)));
      const locks: Lock[] = [];
      // All held at once: a look-alike that mapped to the same key would be busy (wait 0 throws).
      for (const name of run.names) locks.push(await locker.acquire(name, { ttl: 30_000, wait: 0 }));
      const stored = await keyBytes(deployment());
      const literal = run.names.filter((name) =>
        stored.includes(Buffer.from(run.keyOf(name)).toString('hex')),
      );
      expect(literal).toEqual(run.names);
      expect(await redis.get('canary')).toBe('alive');
      // Calls from inside scripts count too: a name that smuggled in a command would show here.
      const after = await Promise.all(servers.map((server) => commandCalls(server)));
      const injected = after.reduce(
        (sum, calls, i) => sum + callsBetween(before[i]!, calls, ['flushall', 'flushdb', 'del']),
        0,
      );
      expect(injected).toBe(0);
      // `a?c` is no glob that `abc` would match; the Cyrillic `pаypal` is held apart from `paypal`.
      const glob = run.names.find((name) => name.endsWith('a?c'))!;
      expect(await locker.isLocked(glob.replace('?', 'b'))).toBe(false);
      expect(await locker.isLocked(run.names.find((name) => name.endsWith('p\u0430ypal'))!)).toBe(true);
      const perServer = await Promise.all(servers.map((server) => server.dbsize()));
      for (const lock of locks) expect(await lock.release()).toBe('released');
      const left = await keyBytes(deployment());
      for (const name of run.names) expect(left).not.toContain(Buffer.from(run.keyOf(name)).toString('hex'));
      expect(await redis.get('canary')).toBe('alive');
      reportFigures(`S25 ${topology}, ${run.name}`, {
        names: run.names.length,
        'stored literally': literal.length,
        'commands injected': injected,
        'servers holding them': perServer.filter((size) => size > 0).length,
      });
    });

    it('refuses a 1 MB name by name, before anything is written', async () => {
      const before = await keyCount(deployment());
      const refusal = await locker
        .acquire(HUGE_NAME, { ttl: 1_000, wait: 0 })
        .catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(InvalidKeyError);
      expect((refusal as InvalidKeyError).key).toBe(HUGE_NAME);
      expect((refusal as Error).message).toMatch(/^invalid lock key "k{80}…": longer than \d+ bytes$/);
      expect(await keyCount(deployment())).toBe(before);
    });

    it('refuses a name holding a lone UTF-16 surrogate by name: Redis would get the key of the U+FFFD name', async () => {
      // 'paypal', behind the run's hash tag where it needs one.
      const lookAlike = run.names.find((name) => name.endsWith('paypal'))!;
      const held = await locker.acquire(`${lookAlike}\uFFFD`, { ttl: 30_000, wait: 0 });
      const before = await keyCount(deployment());
      const refusal = await locker
        .acquire(`${lookAlike}\uD800`, { ttl: 1_000, wait: 0 })
        .catch((error: unknown) => error);
      expect(refusal).toBeInstanceOf(InvalidKeyError);
      expect((refusal as InvalidKeyError).key).toBe(`${lookAlike}\uD800`);
      expect((refusal as Error).message).toContain('lone UTF-16 surrogate');
      expect(await keyCount(deployment())).toBe(before);
      expect(await held.release()).toBe('released');
    });
  });
}

let server: RedisServer;
let single: Deployment;
beforeAll(async () => {
  server = await startRedis();
  single = { redis: server.client(), servers: [server.client()] };
  return () => server.stop();
});

describeKeyNames('a single server', () => single, tokenRun);
describeKeyNames('a single server', () => single, legacyRun(AWKWARD_NAMES));

describe('S25 on a 3-master cluster', () => {
  let cluster: RedisCluster;
  let deployment: Deployment;
  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicasPerMaster: 0 });
    deployment = { redis: cluster.client(), servers: cluster.masters.map((master) => master.client()) };
    return () => cluster.stop();
  });

  describeKeyNames('a 3-master cluster', () => deployment, tokenRun);
  // The legacy lock key is the name itself (its fleets use those bytes), so on a cluster the name
  // must carry the hash tag that puts its fence counter and owner record in its slot.
  describeKeyNames(
    'a 3-master cluster',
    () => deployment,
    legacyRun(AWKWARD_NAMES.map((name) => `{s25}${name}`)),
  );

  it('legacy protocol: an untagged name is refused up front by name (never a CROSSSLOT), nothing written', async () => {
    const locker = createLocker({ redis: deployment.redis, protocol: legacyProtocol() });
    const results: { outcome: string; written: number }[] = [];
    for (const name of AWKWARD_NAMES) {
      const before = await keyCount(deployment);
      const outcome = await locker.acquire(name, { ttl: 5_000, wait: 0 }).then(
        async (lock) => {
          await lock.release();
          return 'locked';
        },
        (error: unknown) => {
          if (error instanceof InvalidKeyError && error.key === name && /\{hash tag\}/.test(error.message)) {
            return 'refused by name';
          }
          // What sending an untagged name's keys to the cluster would bring, counted apart.
          return /CROSSSLOT/.test(String(error)) ? 'CROSSSLOT' : `other: ${String(error)}`;
        },
      );
      results.push({ outcome, written: (await keyCount(deployment)) - before });
    }
    await locker.close();
    const outcomes = results.map((result) => result.outcome);
    const tally = (kind: string) => outcomes.filter((outcome) => outcome === kind).length;
    // Only a name whose full key (`lock:<name>`) carries a hash tag can be locked: `{tag}`.
    const expected = AWKWARD_NAMES.map((name) =>
      hashTag(`lock:${name}`) === null ? 'refused by name' : 'locked',
    );
    expect(outcomes).toEqual(expected);
    expect(tally('locked')).toBe(1);
    const refused = results.filter((result) => result.outcome === 'refused by name');
    expect(refused.map((result) => result.written)).toEqual(refused.map(() => 0));
    reportFigures('S25 a 3-master cluster, legacy untagged', {
      names: AWKWARD_NAMES.length,
      'refused by name': tally('refused by name'),
      locked: tally('locked'),
      'CROSSSLOT errors': tally('CROSSSLOT'),
    });
  });
});
