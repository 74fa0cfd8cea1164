import type { ContentionResult } from './scenarios/contention.js';
import type { RenewalResult } from './scenarios/renewal.js';
import type { ThroughputResult } from './scenarios/throughput.js';
import type { LatencyResult } from './scenarios/uncontended.js';

/** Every figure of one run, keyed by scenario then subject name. */
export interface Results {
  uncontended: Record<string, LatencyResult>;
  throughput: Record<string, ThroughputResult>;
  contention: Record<string, ContentionResult>;
  contentionProcesses: Record<string, ContentionResult>;
  renewal: Record<string, RenewalResult>;
  redlockUncontended: Record<string, LatencyResult>;
  redlockContention: Record<string, ContentionResult>;
}

export interface Target {
  readonly goal: string;
  readonly measured: string;
  readonly met: boolean;
}

type Row = readonly (string | number)[];

function format(value: string | number): string {
  if (typeof value === 'string') return value;
  if (!Number.isFinite(value)) return '–';
  if (Number.isInteger(value) && Math.abs(value) >= 10) return String(value);
  if (Math.abs(value) >= 100) return value.toFixed(0);
  if (Math.abs(value) >= 10) return value.toFixed(1);
  return value.toFixed(value === 0 ? 0 : 3);
}

/** A plain-text table, first column left-aligned, the others right-aligned. */
export function table(title: string, header: Row, rows: readonly Row[]): string {
  const cells = [header, ...rows].map((row) => row.map(format));
  const widths = header.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)));
  const line = (row: readonly string[]) =>
    row
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
      .join('  ');
  const rule = widths.map((width) => '-'.repeat(width)).join('  ');
  return [`\n${title}`, line(cells[0]!), rule, ...cells.slice(1).map(line)].join('\n');
}

const ratio = (a: number | undefined, b: number | undefined) =>
  a === undefined || b === undefined ? Number.NaN : a / b;

function latencyTable(
  title: string,
  results: Record<string, LatencyResult>,
  floor: LatencyResult | undefined,
): string {
  return table(
    title,
    ['subject', 'p50 ms', 'p99 ms', 'mean ms', 'trips/op', 'server cmds/op', 'p50 × floor', 'p99 × floor'],
    Object.entries(results).map(([name, r]) => [
      name,
      r.p50,
      r.p99,
      r.mean,
      r.roundTripsPerOp,
      r.commandsPerOp,
      ratio(r.p50, floor?.p50),
      ratio(r.p99, floor?.p99),
    ]),
  );
}

function contentionTable(
  title: string,
  results: Record<string, ContentionResult>,
  floor: ContentionResult | undefined,
): string {
  return table(
    title,
    [
      'subject',
      'acq/s',
      '× floor',
      'utilization',
      'trips/acq',
      'server cmds/acq',
      'fairness',
      'gap p50 ms',
      'gap p99 ms',
      'overlaps',
    ],
    Object.entries(results).map(([name, r]) => [
      name,
      r.acquisitionsPerSec,
      ratio(r.acquisitionsPerSec, floor?.acquisitionsPerSec),
      r.utilization,
      r.roundTripsPerAcquisition,
      r.commandsPerAcquisition,
      r.fairness,
      r.handoffP50,
      r.handoffP99,
      r.overlaps,
    ]),
  );
}

/** @lock's figure divided by each other subject's, per headline metric. */
function peerRatios(results: Results): string {
  const peers = ['floor', 'redlock', 'redis-semaphore'];
  const line = (metric: string, pick: (name: string) => number | undefined) =>
    [metric, ...peers.map((peer) => ratio(pick('@lock'), pick(peer)))] as Row;
  return table(
    '@lock ÷ each peer (latency and commands: lower is better; rates: higher is better)',
    ['metric', ...peers.map((peer) => `÷ ${peer}`)],
    [
      line('uncontended p50', (name) => results.uncontended[name]?.p50),
      line('uncontended p99', (name) => results.uncontended[name]?.p99),
      line('throughput ops/s', (name) => results.throughput[name]?.opsPerSec),
      line('contention acq/s (1 process)', (name) => results.contention[name]?.acquisitionsPerSec),
      line('contention acq/s (4 processes)', (name) => results.contentionProcesses[name]?.acquisitionsPerSec),
      line('contention trips/acq (1 process)', (name) => results.contention[name]?.roundTripsPerAcquisition),
      line(
        'contention trips/acq (4 processes)',
        (name) => results.contentionProcesses[name]?.roundTripsPerAcquisition,
      ),
      line(
        'contention server cmds/acq (1 process)',
        (name) => results.contention[name]?.commandsPerAcquisition,
      ),
      line(
        'contention server cmds/acq (4 processes)',
        (name) => results.contentionProcesses[name]?.commandsPerAcquisition,
      ),
      line('renewal round trips/interval', (name) => results.renewal[name]?.roundTripsPerInterval),
    ],
  );
}

/** The whole printed report. */
export function render(results: Results, targets: readonly Target[]): string {
  const floorLatency = results.uncontended.floor;
  return [
    latencyTable('Uncontended acquire + release (one client, sequential)', results.uncontended, floorLatency),
    table(
      'Throughput: 200 concurrent loops on 100 keys',
      ['subject', 'ops/s', '× floor', 'trips/op', 'server cmds/op'],
      Object.entries(results.throughput).map(([name, r]) => [
        name,
        r.opsPerSec,
        ratio(r.opsPerSec, results.throughput.floor?.opsPerSec),
        r.roundTripsPerOp,
        r.commandsPerOp,
      ]),
    ),
    contentionTable(
      'Contention on one key, 20 waiters in 1 process',
      results.contention,
      results.contention.floor,
    ),
    contentionTable(
      'Contention on one key, 20 waiters across 4 processes',
      results.contentionProcesses,
      results.contentionProcesses.floor,
    ),
    table(
      'Renewal: renewing locks held for several renewal intervals (floor: no renewal)',
      ['subject', 'locks', 'timers', 'round trips/interval', 'server cmds/interval', 'lost'],
      Object.entries(results.renewal).map(([name, r]) => [
        name,
        r.locks,
        r.timers,
        r.roundTripsPerInterval,
        r.commandsPerInterval,
        r.lost,
      ]),
    ),
    latencyTable(
      'RedLock on 5 masters: uncontended (× the single-server floor)',
      results.redlockUncontended,
      floorLatency,
    ),
    contentionTable(
      'RedLock on 5 masters: contention on one key, 20 waiters in 1 process (× the single-server floor)',
      results.redlockContention,
      results.contention.floor,
    ),
    peerRatios(results),
    table(
      'Targets',
      ['goal', 'measured', 'met'],
      targets.map((target) => [target.goal, target.measured, target.met ? 'yes' : 'NO']),
    ),
  ].join('\n');
}

/** The targets, checked against a run. */
export function checkTargets(results: Results): Target[] {
  const targets: Target[] = [];
  const add = (goal: string, value: number | undefined, met: (value: number) => boolean, digits = 2) => {
    const known = value !== undefined && Number.isFinite(value);
    targets.push({ goal, measured: known ? value.toFixed(digits) : 'n/a', met: known && met(value) });
  };
  const ours = results.uncontended['@lock'];
  add('uncontended p50 ≤ 1.15 × floor', ratio(ours?.p50, results.uncontended.floor?.p50), (v) => v <= 1.15);
  for (const [label, run] of [
    ['1 process', results.contention],
    ['4 processes', results.contentionProcesses],
  ] as const) {
    const lock = run['@lock'];
    add(
      `contention (${label}) acq/s ≥ 3 × redlock`,
      ratio(lock?.acquisitionsPerSec, run.redlock?.acquisitionsPerSec),
      (v) => v >= 3,
    );
    add(
      `contention (${label}) acq/s ≥ 1.5 × redis-semaphore`,
      ratio(lock?.acquisitionsPerSec, run['redis-semaphore']?.acquisitionsPerSec),
      (v) => v >= 1.5,
    );
    add(
      `contention (${label}) trips/acq ≤ 0.5 × redis-semaphore`,
      ratio(lock?.roundTripsPerAcquisition, run['redis-semaphore']?.roundTripsPerAcquisition),
      (v) => v <= 0.5,
    );
    add(
      `contention (${label}) server cmds/acq ≤ 0.5 × redis-semaphore`,
      ratio(lock?.commandsPerAcquisition, run['redis-semaphore']?.commandsPerAcquisition),
      (v) => v <= 0.5,
    );
    add(`contention (${label}) utilization ≥ 0.7`, lock?.utilization, (v) => v >= 0.7);
    add(`contention (${label}) fairness ≥ 0.5`, lock?.fairness, (v) => v >= 0.5);
  }
  const renewal = results.renewal['@lock'];
  add('renewal: one timer for all held locks', renewal?.timers, (v) => v <= 1, 0);
  add('renewal: ≤ 100 round trips per interval', renewal?.roundTripsPerInterval, (v) => v <= 100, 1);
  add(
    'RedLock (5 masters) uncontended p50 ≤ 1.3 × floor',
    ratio(results.redlockUncontended['@lock redlock']?.p50, results.uncontended.floor?.p50),
    (v) => v <= 1.3,
  );
  return targets;
}
