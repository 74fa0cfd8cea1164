import { describe, expect, it } from 'vitest';
import { startMasters } from '../src/index.js';
import { useMasters } from '../src/vitest/index.js';
import { alive, pidsOf } from './proc.js';

describe('startMasters', () => {
  it('starts independent masters that share no data', async () => {
    const masters = await useMasters(3);
    expect(masters.servers).toHaveLength(3);
    expect(masters.urls).toEqual(masters.servers.map((server) => server.url));
    const [first, second, third] = masters.clients();
    await first!.set('only-here', '1');
    expect(await second!.get('only-here')).toBeNull();
    expect(await third!.get('only-here')).toBeNull();
    for (const client of [first!, second!, third!]) {
      expect(await client.info('replication')).toContain('role:master');
    }
  });

  it('stop() leaves none of its processes alive', async () => {
    const masters = await startMasters(2);
    const pids = pidsOf(masters.servers);
    expect(pids.every(alive)).toBe(true);
    await masters.stop();
    expect(pids.filter(alive)).toEqual([]);
  });

  it('refuses a count that is not a positive integer, naming it', async () => {
    await expect(startMasters(0)).rejects.toThrow(new RangeError('count must be an integer >= 1, got 0'));
    await expect(startMasters(1.5)).rejects.toThrow('got 1.5');
  });
});
