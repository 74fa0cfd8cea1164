import { type RedisServer, startRedis } from '@lock/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FleetReport, runFleet, type Slot } from './fleet/fleet.js';
import { phpAvailable } from './php.js';

// Fleets of 8 worker processes (php-cli, or Node with its own connection) race for one key;
// each logs its holds as CLOCK_MONOTONIC intervals, one checker counts the holds that began
// while another was inside, and a witness counter that every hold increments by
// read-modify-write must agree. A PHP-only
// fleet is compared with a mixed one where Node workers take slots 4-7: every slot keeps its
// seed (work times) and its host clock, so only the implementation of slots 4-7 changes.
//
// Slots 4-7 go first; slots 0-3 join once one of them holds. In the mixed fleet that is what
// lets Node in within a short run: PHP workers take over one another's locks up to a second
// before Redis expires them (B2), so after a PHP hold Node sees the key free only once the
// takeover's own TTL runs out, about two leases later (see the README's hazards section).

const SEED = 20_261_122;
const EXPIRE = 1;
const RUN_MS = 4_000;
/** A hold's work, ms: long enough that a worker let go on the first hold is in time to meet it. */
const WORK: [number, number] = [20, 60];
/**
 * Seconds the skewed run's slots 0-3 lag (slots 4-7 lag twice as much). Any LAG from 2 s makes
 * a deadline written `expire + 1` = 2 s ahead by a host LAG s further behind look past.
 */
const LAG = 5;

let server: RedisServer;

const php = (lag = 0): Slot => ({ kind: 'php', offset: -lag });
const node: Slot = { kind: 'node' };

/** Runs the PHP-only fleet and the mixed one side by side, on their own keys. */
async function compare(
  run: string,
  phpOnlySlots: Slot[],
  mixedSlots: Slot[],
): Promise<[FleetReport, FleetReport]> {
  const fleet = (name: string, slots: Slot[]) =>
    runFleet({
      server,
      name,
      slots,
      seed: SEED,
      expire: EXPIRE,
      work: WORK,
      runMs: RUN_MS,
      first: [4, 5, 6, 7],
    });
  return Promise.all([fleet(`${run}:php-only`, phpOnlySlots), fleet(`${run}:mixed`, mixedSlots)]);
}

function log(run: string, phpOnly: FleetReport, mixed: FleetReport): void {
  console.log(
    `fleet ${run} (seed ${SEED}, ${RUN_MS} ms, expire ${EXPIRE} s): ` +
      `PHP-only ${phpOnly.overlaps} overlaps in ${phpOnly.holds.php} holds (${phpOnly.lostUpdates} witness updates lost); ` +
      `mixed ${mixed.overlaps} overlaps in ${mixed.holds.php} PHP + ${mixed.holds.node} Node holds ` +
      `(${mixed.nodeOverlaps} between Node holders, ${mixed.lostUpdates} witness updates lost)`,
  );
}

/** What holds in every fleet: the witness agrees with the checker, and no key is left without a TTL. */
function expectConsistent(report: FleetReport): void {
  expect(report.lostUpdates).toBeGreaterThanOrEqual(0);
  // A lost increment needs two read-modify-writes at once, which lie inside two overlapping holds.
  expect(report.lostUpdates).toBeLessThanOrEqual(report.overlaps);
  expect(report.keyTtl).not.toBe(-1);
}

/** The mixed fleet's own promises: Node took part, and Node holders never met. */
function expectNodeSafe(mixed: FleetReport): void {
  expect(mixed.holds.node).toBeGreaterThan(0);
  expect(mixed.holds.php).toBeGreaterThan(0);
  expect(mixed.nodeOverlaps).toBe(0);
  expect(mixed.nodeFenceRegressions).toBe(0);
}

describe.runIf(phpAvailable)('mixed fleet of PHP and Node worker processes on one key', () => {
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server.stop());

  it('with synchronized clocks: overlaps no more than a PHP-only fleet, none between Node holders', async () => {
    const [phpOnly, mixed] = await compare(
      'synchronized',
      [php(), php(), php(), php(), php(), php(), php(), php()],
      [php(), php(), php(), php(), node, node, node, node],
    );
    log('with synchronized clocks', phpOnly, mixed);
    expect(mixed.overlaps).toBeLessThanOrEqual(phpOnly.overlaps);
    expectNodeSafe(mixed);
    expectConsistent(phpOnly);
    expectConsistent(mixed);
  });

  it('with PHP host clocks skewed (B5): the PHP-only fleet overlaps, the mixed one no more, Node holders never', async () => {
    // Slots 0-3 run LAG s slow, slots 4-7 2·LAG s slow. PHP on 0-3 judges the deadlines PHP on
    // 4-7 writes as already past and takes those locks over (B5); Node reads only the server's
    // clock, so Node on 4-7 needs no offset. The first hold is one of 4-7's and 0-3 are let go
    // as it begins: two BLPOP wake-ups and one EVAL later, well within its 20-60 ms of work,
    // their first attempt takes it over, so the PHP-only fleet overlaps at least once.
    const [phpOnly, mixed] = await compare(
      'skewed',
      [php(LAG), php(LAG), php(LAG), php(LAG), php(2 * LAG), php(2 * LAG), php(2 * LAG), php(2 * LAG)],
      [php(LAG), php(LAG), php(LAG), php(LAG), node, node, node, node],
    );
    log('with PHP clocks skewed', phpOnly, mixed);
    expect(phpOnly.overlaps).toBeGreaterThan(0);
    expect(mixed.overlaps).toBeLessThanOrEqual(phpOnly.overlaps);
    expectNodeSafe(mixed);
    expectConsistent(phpOnly);
    expectConsistent(mixed);
  });
});
