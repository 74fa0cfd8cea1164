import { type RedisMasters, startMasters, startRedis } from '@lock/testing';
import { describe, expect, it } from 'vitest';
import { callTimeout } from '../../src/redlock/options.js';
import { checkHistory } from '../support/history.js';
import { type Failure, type FleetReport, type Section, startFleet } from './fault-fleet.js';
import type { FaultPlan, Meeting } from './fault-worker.js';

// S17 and partitions: RedLock contenders in separate processes, each critical section a real
// read-modify-write of a witness counter that lasts `hold` ms, the recorded intervals checked
// for overlaps. The same run with a quorum of N/2 must be caught. S17 crashes a minority of the
// masters mid-run, then a third: every failure and grant is timed on the host's monotonic clock,
// so the test tells which grants were decided after the majority was gone (none may be).

/** A URL on which nothing listens: a port a server was started on and then stopped. */
async function nowhereUrl(): Promise<string> {
  const server = await startRedis();
  const { url } = server;
  await server.stop();
  return url;
}

interface Scenario {
  readonly masters: RedisMasters;
  readonly witnessUrl: string;
  readonly nowhere: string;
  readonly key: string;
  /** Per contender, which masters it reaches. */
  readonly reach: readonly (readonly boolean[])[];
  readonly iterations: number;
  /** Each acquisition's wait, in ms. Default: 30 000. */
  readonly wait?: number;
  /** See `FaultPlan.waitAfterFailure`. Default: `wait`. */
  readonly waitAfterFailure?: number;
  /** See `FaultPlan.giveUpAfter`. Default: never. */
  readonly giveUpAfter?: number;
  readonly quorum?: number;
  /** Per contender, its part in a meeting that opens the run (none by default). */
  readonly meetings?: readonly Meeting[];
}

function plansOf(scenario: Scenario): FaultPlan[] {
  return scenario.reach.map((reachable, id) => ({
    id,
    masters: scenario.masters.urls,
    reachable,
    nowhere: scenario.nowhere,
    ...(scenario.quorum === undefined ? {} : { quorum: scenario.quorum }),
    ...(scenario.meetings === undefined ? {} : { meeting: scenario.meetings[id]! }),
    ...(scenario.waitAfterFailure === undefined ? {} : { waitAfterFailure: scenario.waitAfterFailure }),
    ...(scenario.giveUpAfter === undefined ? {} : { giveUpAfter: scenario.giveUpAfter }),
    key: scenario.key,
    witnessUrl: scenario.witnessUrl,
    iterations: scenario.iterations,
    hold: 20,
    ttl: 5_000,
    wait: scenario.wait ?? 30_000,
    nodeTimeout,
  }));
}

/** Runs the contenders to the end; `during` runs once they are all under way. */
async function run(scenario: Scenario, during?: (fleet: ReturnType<typeof startFleet>) => Promise<void>) {
  const fleet = startFleet(plansOf(scenario));
  try {
    await fleet.ready;
    fleet.go();
    await during?.(fleet);
    return await fleet.done;
  } finally {
    fleet.kill();
  }
}

/** The checker's verdict on the sections the library said were held throughout. */
function verdictOf(report: FleetReport) {
  return checkHistory(report.sections.filter((section) => section.held));
}

const everywhere = (count: number) => Array.from({ length: count }, () => true);

const nodeTimeout = 100;
/**
 * Room for a loaded 2-core host on top of a call's stated bound (its wait plus one call): still
 * far below what a call left to ioredis's own reconnection would take (~1 min).
 */
const slack = 5_000;

describe('RedLock contenders in separate processes', () => {
  it('keep mutual exclusion with a minority of masters crashed mid-run, and fail closed once a majority has', async () => {
    await using masters = await startMasters(5);
    await using witness = await startRedis();
    const contenders = 4;
    const wait = 5_000;
    let minorityDownAt = 0n;
    let majorityDownAt = 0n;
    const report = await run(
      {
        masters,
        witnessUrl: witness.url,
        nowhere: await nowhereUrl(),
        key: 'crash',
        reach: Array.from({ length: contenders }, () => everywhere(5)),
        // More than any contender reaches before the third crash (at most 18): each ends by
        // giving up once the masters fail closed, after its waiting call and one single try.
        iterations: 24,
        wait,
        waitAfterFailure: 0,
        giveUpAfter: 2,
      },
      async (fleet) => {
        await fleet.sections(contenders);
        await Promise.all([masters.servers[0]!.kill(), masters.servers[3]!.kill()]);
        minorityDownAt = process.hrtime.bigint();
        await fleet.sections(contenders * 4);
        await masters.servers[1]!.kill();
        // Confirmed dead (exited): from here no attempt can reach a majority.
        majorityDownAt = process.hrtime.bigint();
      },
    );
    const { sections, errors } = report;
    // With two of five down, every acquisition succeeded (≥ 99% of fewer than 100 is all).
    expect(errors.filter((error) => error.at < majorityDownAt)).toEqual([]);
    expect(sections.every((section) => section.held)).toBe(true);
    // Most of the granted run happened with two masters dead.
    expect(sections.filter((section) => section.start > minorityDownAt).length).toBeGreaterThan(
      sections.length / 2,
    );
    // With three down, no grant at all: a section may start after the third crash (its grant
    // reported late), but the attempt that got it was sent before.
    const grantedAfter = sections.filter((section: Section) => section.sent >= majorityDownAt);
    expect(grantedAfter, 'grants decided with three of five masters down').toEqual([]);
    expect(verdictOf(report)).toEqual({ overlaps: 0, fenceRegressions: 0, intervals: sections.length });
    expect(Number(await witness.client().get('crash'))).toBe(sections.length);
    // Each contender failed closed, and neither of its calls hung: its waiting call with a
    // QuorumError once its wait ran out, then a single try, made after the third crash, at once.
    const byContender = Array.from({ length: contenders }, (_, id) =>
      errors.filter((error) => error.worker === id),
    );
    expect(byContender.map((failures) => failures.length)).toEqual(byContender.map(() => 2));
    const quorumError = { name: 'QuorumError', code: 'ERR_LOCK_QUORUM' };
    const ms = (failure: Failure) => Number(failure.at - failure.requested) / 1e6;
    const oneCall = callTimeout(nodeTimeout) + slack;
    for (const [waiting, single] of byContender as [Failure, Failure][]) {
      expect(waiting).toMatchObject(quorumError);
      expect(ms(waiting)).toBeGreaterThanOrEqual(wait);
      expect(ms(waiting)).toBeLessThan(wait + oneCall);
      expect(single).toMatchObject(quorumError);
      expect(single.requested).toBeGreaterThan(majorityDownAt);
      expect(ms(single)).toBeLessThan(oneCall);
    }
    expect(report.stderr).not.toContain('Unhandled error event');
  }, 60_000);

  describe('split by a partition: two contenders reach masters 0–2, two reach masters 2–4', () => {
    const reach = [
      [true, true, true, false, false],
      [true, true, true, false, false],
      [false, false, true, true, true],
      [false, false, true, true, true],
    ];
    // One contender of each side meets the other: the guest tries the lock once while the host
    // is in its first section, so a broken quorum overlaps there whatever the scheduling.
    const meetings: Meeting[] = ['host', 'later', 'guest', 'later'];

    it('with a quorum of N/2 (the broken variant), the checker reports overlapping holders', async () => {
      await using masters = await startMasters(5);
      await using witness = await startRedis();
      const report = await run({
        masters,
        witnessUrl: witness.url,
        nowhere: await nowhereUrl(),
        key: 'half',
        reach,
        iterations: 8,
        quorum: 2,
        meetings,
      });
      expect(report.errors).toEqual([]);
      expect(report.sections.filter((section) => section.held)).toHaveLength(32);
      // At least the meeting's; others depend on the scheduling.
      expect(verdictOf(report).overlaps).toBeGreaterThanOrEqual(1);
    });

    it('with the real quorum, no two holders overlap and every write of the witness survives', async () => {
      await using masters = await startMasters(5);
      await using witness = await startRedis();
      const report = await run({
        masters,
        witnessUrl: witness.url,
        nowhere: await nowhereUrl(),
        key: 'majority',
        reach,
        iterations: 8,
        meetings,
      });
      // The guest's one try, made while the host held the lock, is refused.
      expect(report.errors.map((error) => error.name)).toEqual(['LockBusyError']);
      expect(report.sections.every((section) => section.held)).toBe(true);
      expect(verdictOf(report)).toEqual({ overlaps: 0, fenceRegressions: 0, intervals: 31 });
      expect(Number(await witness.client().get('majority'))).toBe(31);
      expect(report.stderr).not.toContain('Unhandled error event');
    });
  });
});
