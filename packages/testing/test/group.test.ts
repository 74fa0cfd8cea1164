import { describe, expect, it, vi } from 'vitest';
import { startServers, stopAfter, stopServers } from '../src/group.js';
import { startCluster, startSentinel } from '../src/index.js';
import type { RedisServer } from '../src/server.js';
import { alive, pidsOf } from './proc.js';

/** Every `startRedis` call of this file's setups, as it ran: to wait for each to settle. */
const starts = vi.hoisted(() => [] as Promise<RedisServer>[]);
vi.mock('../src/server.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../src/server.js')>();
  return {
    ...actual,
    startRedis: (...args: Parameters<typeof actual.startRedis>) => {
      const started = actual.startRedis(...args);
      starts.push(started);
      return started;
    },
  };
});

/** Makes the next `stop()` of `server` reject at once, before stopping anything. */
function failNextStop(server: RedisServer, message: string): void {
  vi.spyOn(server, 'stop').mockRejectedValueOnce(new Error(message));
}

describe('stopServers', () => {
  it('stops every other server before it rejects with the one failure', async () => {
    const servers = await startServers(3);
    const [failing, ...others] = servers;
    try {
      const pids = pidsOf(others);
      failNextStop(failing!, 'stop failed on purpose');
      await expect(stopServers(servers)).rejects.toThrow(new Error('stop failed on purpose'));
      expect(others.map((server) => server.running)).toEqual([false, false]);
      expect(pids.filter(alive)).toEqual([]);
    } finally {
      await stopServers(servers);
    }
  });

  it('rejects with an AggregateError of every failure once all have been tried', async () => {
    const servers = await startServers(3);
    const [first, second, last] = servers;
    try {
      const pid = pidsOf([last!])[0]!;
      failNextStop(first!, 'first failed');
      failNextStop(second!, 'second failed');
      const error: unknown = await stopServers(servers).catch((reason: unknown) => reason);
      expect(error).toBeInstanceOf(AggregateError);
      expect((error as AggregateError).errors.map((each: Error) => each.message)).toEqual([
        'first failed',
        'second failed',
      ]);
      expect(last!.running).toBe(false);
      expect(alive(pid)).toBe(false);
    } finally {
      await stopServers(servers);
    }
  });

  it('a sentinel set stops its nodes although a sentinel failed to stop', async () => {
    const setup = await startSentinel({ replicas: 1, sentinels: 1 });
    try {
      const pids = pidsOf(setup.nodes);
      failNextStop(setup.sentinels[0]!, 'sentinel stop failed');
      await expect(setup.stop()).rejects.toThrow(new Error('sentinel stop failed'));
      expect(setup.nodes.map((node) => node.running)).toEqual([false, false]);
      expect(pids.filter(alive)).toEqual([]);
    } finally {
      await setup.stop();
    }
  });

  it("a failed setup's cleanup keeps the setup's error first when a stop fails too", async () => {
    const servers = await startServers(2);
    const [failing, other] = servers;
    try {
      const pid = pidsOf([other!])[0]!;
      failNextStop(failing!, 'stop failed on purpose');
      const setupError = new Error('setup failed on purpose');
      const error: unknown = await stopAfter(setupError, servers).catch((reason: unknown) => reason);
      expect(error).toBeInstanceOf(AggregateError);
      expect((error as AggregateError).errors[0]).toBe(setupError);
      expect(alive(pid)).toBe(false);
      await expect(stopAfter(setupError, [])).rejects.toBe(setupError);
    } finally {
      await stopServers(servers);
    }
  });
});

describe('a node callback that throws', () => {
  const setups = {
    cluster: (node: (index: number) => object) => startCluster({ masters: 3, replicasPerMaster: 0, node }),
    sentinel: (node: (index: number) => object) => startSentinel({ replicas: 2, sentinels: 1, node }),
  };

  it.each(Object.keys(setups) as (keyof typeof setups)[])(
    'rejects a %s setup with its error and leaves no server it started running',
    async (kind) => {
      starts.length = 0;
      const thrown = new Error('node options failed on purpose');
      const failure = setups[kind]((index) => {
        if (index === 2) throw thrown;
        return {};
      });
      await expect(failure).rejects.toBe(thrown);
      // Each start the setup began, settled: none may have been left behind running.
      const servers = (await Promise.allSettled(starts)).flatMap((result) =>
        result.status === 'fulfilled' ? [result.value] : [],
      );
      try {
        expect(servers.filter((server) => server.running).map((server) => server.port)).toEqual([]);
      } finally {
        await stopServers(servers);
      }
    },
  );
});
