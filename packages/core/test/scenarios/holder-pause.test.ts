import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fencedSet, type Lock } from '@lock/core';
import { assertHistory, checkHistory, HistoryRecorder, readHistory, startMasters } from '@lock/testing';
import { describe, expect, it } from 'vitest';
import { DEPLOYMENTS, type Deployment, deployment, lease } from '../support/deployments.js';
import { startScript } from '../support/script-process.js';
import { rounds, timeLimit } from './support/tier.js';

const TTL = 400;
const ROUNDS = rounds(3, 50);

/**
 * S6 (Kleppmann): holder A checks its lease, is frozen by SIGSTOP between the check and its
 * write until its lease ran out and B acquired and wrote, then resumes and writes. Runs `ROUNDS`
 * rounds over `target` (the resource on its first master) and returns the merged history and
 * A's write results.
 */
async function pausedHolderRounds(target: Deployment, fenced: boolean) {
  await using masters = await startMasters(target.masters);
  const dir = mkdtempSync(join(tmpdir(), 's6-'));
  const key = 's6:account';
  const resource = 's6:resource';
  const holderA = startScript(new URL('./support/paused-writer.ts', import.meta.url), {
    urls: masters.urls,
    deployment: target.name,
    key,
    ttl: lease(target, TTL),
    resource,
    fenced,
    history: join(dir, 'a.jsonl'),
    id: 'A',
  });
  const clients = masters.clients();
  const redis = clients[0]!;
  const locker = target.create(clients);
  const recorderB = new HistoryRecorder('B');
  const results: { fence: number; accepted: boolean; fenceB: number }[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      holderA.send('acquire');
      await holderA.line((line) => line === 'checked');
      holderA.pause();
      // B waits for A's lease to run out: the pause lasts at least the rest of A's lease.
      const lock: Lock = await locker.acquire(key, { ttl: 10_000, wait: 10_000 });
      recorderB.acquired(lock);
      const accepted = fenced
        ? await fencedSet(redis, resource, lock.fence, 'B')
        : (await redis.hset(resource, 'fence', lock.fence, 'value', 'B')) >= 0;
      recorderB.wrote(lock, accepted, resource);
      recorderB.released(lock);
      await lock.release();
      holderA.resume();
      const reply = JSON.parse(await holderA.line((line) => line.startsWith('{'))) as {
        fence: number;
        accepted: boolean;
      };
      results.push({ ...reply, fenceB: lock.fence });
    }
  } finally {
    await holderA.stop();
    await locker.close();
  }
  const events = [...readHistory(join(dir, 'a.jsonl')), ...recorderB.events];
  rmSync(dir, { recursive: true, force: true });
  return { events, results };
}

describe(`S6: a holder frozen (SIGSTOP) between its lease check and its write, ${ROUNDS} rounds`, () => {
  it.each(DEPLOYMENTS)(
    'fenced ($name): every late write is refused, B’s fence is higher, and the history checks clean',
    async (target) => {
      const { events, results } = await pausedHolderRounds(target, true);
      expect(results).toHaveLength(ROUNDS);
      for (const { fence, accepted, fenceB } of results) {
        expect(accepted).toBe(false);
        expect(fenceB).toBeGreaterThan(fence);
      }
      const verdict = assertHistory(events, { name: 'S6-fenced' });
      expect(verdict.staleWrites).toHaveLength(0);
      expect(verdict.intervals).toBe(2 * ROUNDS);
    },
    timeLimit(30_000, 300_000),
  );

  it(
    'unfenced (✗-expected): every late write is accepted, and the checker reports each as stale and overlapping',
    async () => {
      // The hazard fencing answers is the same whatever the protocol: shown on the default one.
      const { events, results } = await pausedHolderRounds(deployment('token'), false);
      expect(results.map((result) => result.accepted)).toEqual(Array(ROUNDS).fill(true));
      // Epsilon 0: A's late write lands after B's grant by construction, sometimes by less than 1 ms.
      const verdict = checkHistory(events, { epsilonMs: 0 });
      expect(verdict.ok).toBe(false);
      expect(verdict.staleWrites).toHaveLength(ROUNDS);
      expect(verdict.staleWrites.every((write) => write.process === 'A')).toBe(true);
      expect(verdict.overlaps).toHaveLength(ROUNDS);
      expect(verdict.maxOverrunMs).toBeGreaterThan(0);
    },
    timeLimit(30_000, 300_000),
  );
});
