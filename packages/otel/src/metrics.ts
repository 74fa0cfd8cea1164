import { type Counter, type Histogram, type Meter, type UpDownCounter, ValueType } from '@opentelemetry/api';
import {
  METRIC_LOCK_ACQUISITIONS,
  METRIC_LOCK_HELD,
  METRIC_LOCK_HOLD_DURATION,
  METRIC_LOCK_LOSSES,
  METRIC_LOCK_RENEWAL_BATCH_SIZE,
  METRIC_LOCK_RENEWALS,
  METRIC_LOCK_TIMEOUTS,
  METRIC_LOCK_WAIT_DURATION,
  METRIC_LOCK_WAITING,
} from './metric-names.js';

/** Waits are usually short: the boundaries the HTTP conventions advise for request durations. */
const WAIT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];
/** Holds can last as long as the work they guard: the same, stretched to a quarter of an hour. */
const HOLD_BUCKETS = [...WAIT_BUCKETS, 30, 60, 300, 900];

/** The instruments of one `instrumentLocks()` call. */
export interface LockMetrics {
  readonly waitDuration: Histogram;
  readonly holdDuration: Histogram;
  readonly acquisitions: Counter;
  readonly timeouts: Counter;
  readonly losses: Counter;
  readonly renewals: Counter;
  readonly renewalBatchSize: Histogram;
  readonly held: UpDownCounter;
  readonly waiting: UpDownCounter;
}

export function createLockMetrics(meter: Meter): LockMetrics {
  const count = (name: string, unit: string, description: string) =>
    meter.createCounter(name, { unit, description, valueType: ValueType.INT });
  const current = (name: string, unit: string, description: string) =>
    meter.createUpDownCounter(name, { unit, description, valueType: ValueType.INT });
  return {
    waitDuration: meter.createHistogram(METRIC_LOCK_WAIT_DURATION, {
      unit: 's',
      description: 'Duration of lock acquire calls, waiting included.',
      advice: { explicitBucketBoundaries: WAIT_BUCKETS },
    }),
    holdDuration: meter.createHistogram(METRIC_LOCK_HOLD_DURATION, {
      unit: 's',
      description: 'How long locks were held, from acquisition to release or loss.',
      advice: { explicitBucketBoundaries: HOLD_BUCKETS },
    }),
    acquisitions: count(METRIC_LOCK_ACQUISITIONS, '{acquisition}', 'Locks acquired.'),
    timeouts: count(METRIC_LOCK_TIMEOUTS, '{timeout}', 'Acquire calls that gave up waiting.'),
    losses: count(METRIC_LOCK_LOSSES, '{loss}', 'Held locks lost before their release.'),
    renewals: count(METRIC_LOCK_RENEWALS, '{renewal}', 'Leases renewed by the watchdog.'),
    renewalBatchSize: meter.createHistogram(METRIC_LOCK_RENEWAL_BATCH_SIZE, {
      unit: '{lock}',
      description: 'Locks renewed together in one watchdog round trip; error.type on a round that failed.',
      valueType: ValueType.INT,
    }),
    held: current(METRIC_LOCK_HELD, '{lock}', 'Locks this process holds now.'),
    waiting: current(METRIC_LOCK_WAITING, '{call}', 'Lock acquire calls in progress.'),
  };
}
