/**
 * Metric names, with the instrument kind and unit each one has. Like the attribute names they
 * are stable public API. By analogy with the `db.client.connection.*` pool metrics of the
 * semantic conventions (a lock is a pool of one): durations are histograms in seconds, counts of
 * things are plural counters with a `{thing}` unit, current amounts are up-down counters.
 */

/** Histogram, `s`: how long acquire calls took, by `lock.protocol` and `lock.outcome`. */
export const METRIC_LOCK_WAIT_DURATION = 'lock.wait.duration';
/** Histogram, `s`: how long locks were held, by `lock.protocol` and `lock.hold.outcome`. */
export const METRIC_LOCK_HOLD_DURATION = 'lock.hold.duration';
/** Counter, `{acquisition}`: successful acquisitions, by `lock.protocol` and `lock.reentry`. */
export const METRIC_LOCK_ACQUISITIONS = 'lock.acquisitions';
/** Counter, `{timeout}`: acquire calls that gave up waiting, by `lock.protocol`. */
export const METRIC_LOCK_TIMEOUTS = 'lock.timeouts';
/** Counter, `{loss}`: held locks lost, by `lock.protocol` and `lock.lost.reason`. */
export const METRIC_LOCK_LOSSES = 'lock.losses';
/** Counter, `{renewal}`: leases renewed by the watchdog, by `lock.protocol`. */
export const METRIC_LOCK_RENEWALS = 'lock.renewals';
/**
 * Histogram, `{lock}`: locks per watchdog renewal batch (one round trip each), by `lock.protocol`;
 * a round that failed for some or all of its locks also has `error.type` `_OTHER`.
 */
export const METRIC_LOCK_RENEWAL_BATCH_SIZE = 'lock.renewal.batch.size';
/** UpDownCounter, `{lock}`: locks this process holds now (re-entries count once), by `lock.protocol`. */
export const METRIC_LOCK_HELD = 'lock.held';
/** UpDownCounter, `{call}`: acquire and tryAcquire calls in progress, by `lock.protocol`. */
export const METRIC_LOCK_WAITING = 'lock.waiting';
