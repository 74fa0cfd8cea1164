import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RedisSentinel, startSentinel, waitFor } from '../src/index.js';
import { useSentinel } from '../src/vitest/index.js';
import { alive, pidsOf } from './proc.js';

let setup: RedisSentinel;

/** A sentinel's `SENTINEL MASTER` record of mymaster. */
async function masterRecord(sentinel: RedisSentinel['sentinels'][number]): Promise<Record<string, string>> {
  const row = (await sentinel.client().call('SENTINEL', 'MASTER', 'mymaster')) as string[];
  return Object.fromEntries(Array.from({ length: row.length / 2 }, (_, i) => [row[2 * i], row[2 * i + 1]]));
}

beforeAll(async () => {
  setup = await startSentinel({ replicas: 2, sentinels: 3 });
});

afterAll(() => setup.stop());

describe('startSentinel', () => {
  it('exposes the master name, sentinel addresses and sentinel-backed ioredis options', () => {
    expect(setup.masterName).toBe('mymaster');
    expect(setup.nodes).toHaveLength(3);
    expect(setup.sentinels).toHaveLength(3);
    expect(setup.sentinelAddresses).toEqual(setup.sentinels.map(({ host, port }) => ({ host, port })));
    expect(setup.redisOptions).toEqual({ sentinels: setup.sentinelAddresses, name: 'mymaster' });
  });

  it('every sentinel answers SENTINEL get-master-addr-by-name with the master', async () => {
    const master = setup.nodes[0]!;
    for (const sentinel of setup.sentinels) {
      const address = await sentinel.client().call('SENTINEL', 'get-master-addr-by-name', 'mymaster');
      expect(address).toEqual([master.host, String(master.port)]);
    }
    expect(await setup.master()).toBe(master);
  });

  it('replicates writes made through a sentinel-backed client', async () => {
    await setup.client().set('replicated', 'yes');
    for (const replica of setup.nodes.slice(1)) {
      const client = replica.client();
      // WAIT on the master would be the strict way; replicas catch up within milliseconds here.
      await expect.poll(() => client.get('replicated'), { timeout: 10_000 }).toBe('yes');
    }
  });

  it('failover() moves the master to a replica that answers as master', async () => {
    const old = await setup.master();
    const promoted = await setup.failover();
    expect(promoted).not.toBe(old);
    expect(setup.nodes).toContain(promoted);
    expect(await promoted.client().info('replication')).toContain('role:master');
    for (const sentinel of setup.sentinels) {
      const address = await sentinel.client().call('SENTINEL', 'get-master-addr-by-name', 'mymaster');
      expect(address).toEqual([promoted.host, String(promoted.port)]);
    }
    const client = setup.client();
    await client.set('after-failover', '1');
    expect(await promoted.client().get('after-failover')).toBe('1');
  });

  it('refuses bad sizes before starting anything, naming the value', async () => {
    await expect(startSentinel({ replicas: 0 })).rejects.toThrow('replicas must be an integer >= 1, got 0');
    await expect(startSentinel({ sentinels: 2.5 })).rejects.toThrow(
      'sentinels must be an integer >= 1, got 2.5',
    );
    await expect(startSentinel({ sentinels: 3, quorum: 4 })).rejects.toThrow(
      'quorum must be <= sentinels (3), got 4',
    );
    await expect(startSentinel({ downAfterMilliseconds: 0 })).rejects.toThrow(
      'downAfterMilliseconds must be an integer >= 1, got 0',
    );
    await expect(startSentinel({ masterName: 'my master' })).rejects.toThrow(
      "masterName must be a word, got 'my master'",
    );
  });

  it('stop() leaves none of its processes alive', async () => {
    const pids = pidsOf([...setup.nodes, ...setup.sentinels]);
    expect(pids.every(alive)).toBe(true);
    await setup.stop();
    expect(pids.filter(alive)).toEqual([]);
  });
});

describe('startSentinel with per-node options', () => {
  it('node(index) gives one data server its own options over server, config merged key by key', async () => {
    const setup = await useSentinel({
      replicas: 2,
      sentinels: 1,
      server: { config: { 'maxmemory-policy': 'noeviction', 'replica-priority': 100 } },
      node: (index) => (index === 2 ? { config: { 'replica-priority': 50 } } : undefined),
    });
    const config = async (node: number, name: string) =>
      ((await setup.nodes[node]!.client().call('CONFIG', 'GET', name)) as string[])[1];
    expect(await Promise.all([0, 1, 2].map((node) => config(node, 'replica-priority')))).toEqual([
      '100',
      '100',
      '50',
    ]);
    expect(await Promise.all([0, 1, 2].map((node) => config(node, 'maxmemory-policy')))).toEqual([
      'noeviction',
      'noeviction',
      'noeviction',
    ]);
    // Its own config does not replace the replicaof the replica is started with.
    expect(await setup.nodes[2]!.client().info('replication')).toContain(
      `master_port:${setup.nodes[0]!.port}\r`,
    );
  });
});

describe('sentinels that stop answering', () => {
  it('master() and failover() skip a paused sentinel and ask the others in turn', async () => {
    const setup = await useSentinel({ replicas: 1, sentinels: 3 });
    const [paused, hung] = setup.sentinels;
    const old = await setup.master();
    paused!.pause();
    expect(await setup.master()).toBe(old);
    const promoted = await setup.failover();
    expect(promoted).not.toBe(old);
    // Frozen behind the library's back, so only asking the next sentinel gets an answer.
    process.kill(hung!.pid!, 'SIGSTOP');
    expect(await setup.master()).toBe(promoted);
  });
});

describe('switchedFrom()', () => {
  it('resolves with the new master once every sentinel records it as its own, with no failover in progress', async () => {
    // Two replicas: the sentinel leading the failover names the promoted one (`master()`) while it
    // still reconfigures the other. With one, it switches at once, and this test could not fail.
    const setup = await useSentinel({ replicas: 2, sentinels: 3, failoverTimeout: 4_000, timeout: 60_000 });
    const old = await setup.master();
    await old.kill();
    const promoted = await setup.switchedFrom(old);
    expect(promoted).not.toBe(old);
    const records = await Promise.all(setup.sentinels.map(masterRecord));
    expect(records.map((record) => [Number(record.port), /failover/.test(record.flags ?? '')])).toEqual(
      setup.sentinels.map(() => [promoted.port, false]),
    );
    expect(await setup.master()).toBe(promoted);
  }, 90_000);
});

describe('failover() and a failover already under way', () => {
  it('waits for it and returns its new master instead of starting a second failover', async () => {
    const setup = await useSentinel({ replicas: 2, sentinels: 1 });
    const [sentinel] = setup.sentinels;
    const old = await setup.master();
    // What a request sent again after its OK was lost finds: the failover it asked for is running.
    expect(await sentinel!.client().call('SENTINEL', 'FAILOVER', 'mymaster')).toBe('OK');
    const promoted = await setup.failover();
    expect(promoted).not.toBe(old);
    await waitFor(
      'no failover in progress',
      async () => !(await masterRecord(sentinel!)).flags!.includes('failover_in_progress'),
    );
    expect(await setup.master()).toBe(promoted);
    expect((await masterRecord(sentinel!))['config-epoch']).toBe('1');
  });
});
