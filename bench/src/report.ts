import type { ContentionResult } from './scenarios/contention.js';
import type { HandoffResult } from './scenarios/handoff.js';
import type { KeysLeftResult } from './scenarios/keys-left.js';
import type { RenewalResult } from './scenarios/renewal.js';
import type { ThroughputResult } from './scenarios/throughput.js';
import type { LatencyResult } from './scenarios/uncontended.js';

/** Every figure of one run, keyed by scenario then subject name. */
export interface Results {
  uncontended: Record<string, LatencyResult>;
  throughput: Record<string, ThroughputResult>;
  contention: Record<string, ContentionResult>;
  contentionProcesses: Record<string, ContentionResult>;
  handoff: Record<string, HandoffResult>;
  /** One PING after the hand-off's idle time: what a hand-off's first round trip costs at least. */
  idleRoundTrip: HandoffResult | undefined;
  keysLeft: Record<string, KeysLeftResult>;
  renewal: Record<string, RenewalResult>;
  redlockUncontended: Record<string, LatencyResult>;
  redlockContention: Record<string, ContentionResult>;
  redlockKeysLeft: Record<string, KeysLeftResult>;
}

export interface Target {
  readonly goal: string;
  readonly measured: string;
  /** Undefined for a figure with no numeric goal, reported for reading. */
  readonly met: boolean | undefined;
  /** The figures the measured value was computed from. */
  readonly detail: string;
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
      'client CPU ms/acq',
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
      r.clientCpuPerAcquisition,
      r.fairness,
      r.handoffP50,
      r.handoffP99,
      r.overlaps,
    ]),
  );
}

function keysLeftTable(title: string, results: Record<string, KeysLeftResult>): string {
  return table(
    title,
    ['subject', 'keys locked once', 'keys left', 'without TTL'],
    Object.entries(results).map(([name, r]) => [name, r.locked, String(r.keys), String(r.persistent)]),
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
      line('hand-off p50', (name) => results.handoff[name]?.p50),
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
    table(
      'Hand-off to a waiter already waiting on its own connections: release() called → acquire() resolved',
      ['subject', 'p50 ms', 'p99 ms', 'mean ms', 'hand-offs', 'p50 × floor'],
      [
        ...Object.entries(results.handoff),
        ...(results.idleRoundTrip
          ? [['one PING after the same idle time', results.idleRoundTrip] as const]
          : []),
      ].map(([name, r]) => [
        name,
        r.p50,
        r.p99,
        r.mean,
        r.iterations,
        ratio(r.p50, results.handoff.floor?.p50),
      ]),
    ),
    contentionTable(
      'Contention on one key, 4 processes × 5 waiters',
      results.contentionProcesses,
      results.contentionProcesses.floor,
    ),
    keysLeftTable('Keys left in Redis after distinct keys were locked and released once', results.keysLeft),
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
    keysLeftTable('RedLock on 5 masters: keys left (summed over the masters)', results.redlockKeysLeft),
    contentionTable(
      'RedLock on 5 masters: contention on one key, 20 waiters in 1 process (× the single-server floor)',
      results.redlockContention,
      results.contention.floor,
    ),
    peerRatios(results),
    table(
      'Targets',
      ['goal', 'measured', 'met', 'from'],
      targets.map((target) => [
        target.goal,
        target.measured,
        target.met === undefined ? '–' : target.met ? 'yes' : 'NO',
        target.detail,
      ]),
    ),
  ].join('\n');
}

const figure = (value: number | undefined, unit = '') =>
  value === undefined || !Number.isFinite(value) ? 'n/a' : `${format(value)}${unit}`;
/** `a` as a multiple of `b`, e.g. "1.08 × the floor". */
const ratioFigure = (a: number | undefined, b: number | undefined) => `${figure(ratio(a, b))} × the floor`;

/** The goals of issue 16 first, then those of issues 3 and 4, checked against a run. */
export function checkTargets(results: Results): Target[] {
  const targets: Target[] = [];
  const add = (
    goal: string,
    value: number | undefined,
    met: ((value: number) => boolean) | undefined,
    detail = '',
    digits = 2,
  ) => {
    const known = value !== undefined && Number.isFinite(value);
    targets.push({
      goal,
      measured: known ? value.toFixed(digits) : 'n/a',
      met: met && known && met(value),
      detail,
    });
  };
  const { uncontended, handoff, contention, contentionProcesses: processes } = results;
  add(
    'uncontended p50 ≤ 1.15 × floor (fence included)',
    ratio(uncontended['@lock']?.p50, uncontended.floor?.p50),
    (v) => v <= 1.15,
    `@lock ${figure(uncontended['@lock']?.p50, ' ms')}, floor ${figure(uncontended.floor?.p50, ' ms')}; the floor with a fence ${ratioFigure(uncontended['floor + fence']?.p50, uncontended.floor?.p50)}, @lock's protocol without the engine ${ratioFigure(uncontended['@lock protocol']?.p50, uncontended.floor?.p50)}`,
  );
  add(
    'hand-off to a waiting connection p50 ≤ 0.3 ms',
    handoff['@lock']?.p50,
    (v) => v <= 0.3,
    `redlock ${figure(handoff.redlock?.p50, ' ms')}, redis-semaphore ${figure(handoff['redis-semaphore']?.p50, ' ms')}, floor ${figure(handoff.floor?.p50, ' ms')}, the floor with a queue ${figure(handoff['floor + queue']?.p50, ' ms')}, one PING after the same idle time ${figure(results.idleRoundTrip?.p50, ' ms')}`,
    3,
  );
  const acqs = (run: Record<string, ContentionResult>, name: string) =>
    `${name} ${figure(run[name]?.acquisitionsPerSec)}`;
  add(
    '20 waiters, 1 process: acq/s ≥ 3 × redlock',
    ratio(contention['@lock']?.acquisitionsPerSec, contention.redlock?.acquisitionsPerSec),
    (v) => v >= 3,
    `${acqs(contention, '@lock')}, ${acqs(contention, 'redlock')}`,
  );
  add(
    '4 processes × 5 waiters: acq/s ≥ 1.5 × redis-semaphore',
    ratio(processes['@lock']?.acquisitionsPerSec, processes['redis-semaphore']?.acquisitionsPerSec),
    (v) => v >= 1.5,
    `${acqs(processes, '@lock')}, ${acqs(processes, 'redis-semaphore')}; the floor with a queue ${figure(processes['floor + queue']?.acquisitionsPerSec)} (${figure(ratio(processes['floor + queue']?.acquisitionsPerSec, processes['redis-semaphore']?.acquisitionsPerSec))} × redis-semaphore)`,
  );
  add(
    '4 processes × 5 waiters: utilization ≥ 0.7',
    processes['@lock']?.utilization,
    (v) => v >= 0.7,
    `the floor with a queue ${figure(processes['floor + queue']?.utilization)}`,
  );
  add('4 processes × 5 waiters: fairness ≥ 0.5', processes['@lock']?.fairness, (v) => v >= 0.5);
  const keys = results.keysLeft;
  add(
    `keys left after ${figure(keys['@lock']?.locked)} distinct keys ≤ 100`,
    keys['@lock']?.keys,
    (v) => v <= 100,
    Object.entries(keys)
      .filter(([name]) => name !== '@lock')
      .map(([name, r]) => `${name} ${r.keys}`)
      .join(', '),
    0,
  );
  const quorum = results.redlockUncontended;
  const ours = quorum['@lock redlock']?.p50;
  const quorumDetail = `@lock redlock ${figure(ours, ' ms')}`;
  add(
    'RedLock (5 masters) uncontended p50 ÷ single-server floor',
    ratio(ours, uncontended.floor?.p50),
    undefined,
    quorumDetail,
  );
  add(
    'RedLock (5 masters) uncontended p50 ÷ floor (5), the parallel fan-out minimum',
    ratio(ours, quorum['floor (5)']?.p50),
    undefined,
    `floor (5) ${figure(quorum['floor (5)']?.p50, ' ms')}`,
  );
  add(
    'RedLock (5 masters) uncontended p50 ÷ redlock (5)',
    ratio(ours, quorum['redlock (5)']?.p50),
    undefined,
    `redlock (5) ${figure(quorum['redlock (5)']?.p50, ' ms')}`,
  );
  const lock = contention['@lock'];
  add(
    'contention (1 process) acq/s ≥ 1.5 × redis-semaphore',
    ratio(lock?.acquisitionsPerSec, contention['redis-semaphore']?.acquisitionsPerSec),
    (v) => v >= 1.5,
  );
  add('contention (1 process) utilization ≥ 0.7', lock?.utilization, (v) => v >= 0.7);
  add('contention (1 process) fairness ≥ 0.5', lock?.fairness, (v) => v >= 0.5);
  add(
    'contention (4 processes) acq/s ≥ 3 × redlock',
    ratio(processes['@lock']?.acquisitionsPerSec, processes.redlock?.acquisitionsPerSec),
    (v) => v >= 3,
  );
  for (const [label, run] of [
    ['1 process', contention],
    ['4 processes', processes],
  ] as const) {
    add(
      `contention (${label}) trips/acq ≤ 0.5 × redis-semaphore`,
      ratio(run['@lock']?.roundTripsPerAcquisition, run['redis-semaphore']?.roundTripsPerAcquisition),
      (v) => v <= 0.5,
    );
    add(
      `contention (${label}) server cmds/acq ≤ 0.5 × redis-semaphore`,
      ratio(run['@lock']?.commandsPerAcquisition, run['redis-semaphore']?.commandsPerAcquisition),
      (v) => v <= 0.5,
    );
  }
  const renewal = results.renewal['@lock'];
  add('renewal: one timer for all held locks', renewal?.timers, (v) => v <= 1, '', 0);
  add('renewal: ≤ 100 round trips per interval', renewal?.roundTripsPerInterval, (v) => v <= 100, '', 1);
  add(
    'RedLock (5 masters) uncontended p50 ≤ 1.3 × floor',
    ratio(ours, uncontended.floor?.p50),
    (v) => v <= 1.3,
    quorumDetail,
  );
  return targets;
}
