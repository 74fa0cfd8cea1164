import { mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CheckHistoryOptions, checkHistory, type HistoryVerdict } from './check.js';
import { eventToJson, type HistoryEvent } from './events.js';

/** Options of `assertHistory`. */
export interface AssertHistoryOptions extends CheckHistoryOptions {
  /**
   * Where a failing history is written. Default: `$LOCK_HISTORY_DIR`, else
   * `<os tmpdir>/lock-histories` (point CI's artifact upload at it).
   */
  dir?: string;
  /** Names the file: `<name>-<time>.jsonl`. Default: `'history'`. */
  name?: string;
}

/** A history that failed its check; `file` holds it (events, then the verdict) for inspection. */
export class HistoryViolationError extends Error {
  override readonly name = 'HistoryViolationError';
  constructor(
    readonly verdict: HistoryVerdict,
    readonly file: string,
  ) {
    super(`lock history violated: ${summary(verdict)}; history written to ${file}`);
  }
}

/** Checks the history and throws `HistoryViolationError`, after writing it to a file, when it fails. */
export function assertHistory(
  events: readonly HistoryEvent[],
  options: AssertHistoryOptions = {},
): HistoryVerdict {
  const verdict = checkHistory(events, options);
  if (verdict.ok) return verdict;
  throw new HistoryViolationError(verdict, writeFailingHistory(events, verdict, options));
}

/** Writes events (sorted by time) and a last `{"verdict": …}` line; returns the file's path. */
export function writeFailingHistory(
  events: readonly HistoryEvent[],
  verdict: HistoryVerdict,
  options: Pick<AssertHistoryOptions, 'dir' | 'name'> = {},
): string {
  const dir = options.dir ?? process.env.LOCK_HISTORY_DIR ?? join(tmpdir(), 'lock-histories');
  const name = (options.name ?? 'history').replace(/[^\w.-]+/g, '_');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}-${new Date().toISOString().replace(/[:.]/g, '-')}-${process.pid}.jsonl`);
  const sorted = [...events].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  const lines = sorted.map(eventToJson);
  lines.push(
    JSON.stringify({ verdict: summary(verdict) }, (_, value: unknown) =>
      typeof value === 'bigint' ? String(value) : value,
    ),
  );
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

/** The verdict in one line: each violated property with its count. */
export function summary(verdict: HistoryVerdict): string {
  const parts = [
    `${verdict.overlaps.length} overlaps (max overrun ${verdict.maxOverrunMs.toFixed(1)} ms)`,
    `${verdict.fenceIssues.length} fence duplicates/regressions`,
    `${verdict.staleWrites.length} stale writes accepted`,
    `${verdict.unheldWrites.length} writes accepted without a hold`,
    `${verdict.lostUpdates} lost updates`,
  ];
  return `${parts.join(', ')} in ${verdict.intervals} holds (${verdict.events} events)`;
}
