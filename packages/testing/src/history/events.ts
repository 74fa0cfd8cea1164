/**
 * One thing a process did with a lock, stamped with `process.hrtime.bigint()`: CLOCK_MONOTONIC,
 * shared by every process of one host, so events of different processes order exactly.
 */
export interface HistoryEvent {
  /**
   * `acquire`: the lock was granted (at = when the grant came back). `release`: the holder gave
   * it up (at = when release was called). `lost`: the holder learned it was lost. `extend`: the
   * holder's lease was extended (at = when the extension came back). `write`: the holder wrote
   * to the protected resource (at = when the write came back).
   */
  readonly op: 'acquire' | 'release' | 'lost' | 'extend' | 'write';
  /** The process or worker that did it. */
  readonly process: string;
  /**
   * The lock's owner identity (`Lock.owner`). Holds are told apart by owner, as the lock counts
   * re-entry per owner; events without one (histories recorded before owners were) fall back to
   * the process.
   */
  readonly owner?: string;
  /** The lock's name. */
  readonly lock: string;
  /** `process.hrtime.bigint()` of the event, in ns. */
  readonly at: bigint;
  /** The fence of the hold (acquire), or the one the write carried (write). */
  readonly fence?: number;
  /**
   * acquire, extend: hrtime (ns) when the holder's belief ends unless renewed: its `validUntil`
   * (after the extension, for extend).
   */
  readonly deadline?: bigint;
  /** write: whether the resource accepted it. */
  readonly accepted?: boolean;
  /** write: the resource written. Default: the lock's name. */
  readonly resource?: string;
}

/** One event as a JSON line (bigints as decimal strings). */
export function eventToJson(event: HistoryEvent): string {
  return JSON.stringify(event, (_, value: unknown) => (typeof value === 'bigint' ? String(value) : value));
}

/** Parses JSON lines written by `eventToJson`; blank lines are skipped, a bad line names its number. */
export function parseEvents(jsonl: string, source = 'history'): HistoryEvent[] {
  const events: HistoryEvent[] = [];
  for (const [index, line] of jsonl.split('\n').entries()) {
    if (line.trim() === '') continue;
    let raw: Record<string, unknown>;
    try {
      raw = JSON.parse(line) as Record<string, unknown>;
    } catch {
      throw new SyntaxError(`${source} line ${index + 1} is not JSON: ${line.slice(0, 80)}`);
    }
    const ops = ['acquire', 'release', 'lost', 'extend', 'write'];
    if (!ops.includes(raw.op as string) || typeof raw.process !== 'string' || typeof raw.lock !== 'string') {
      throw new SyntaxError(`${source} line ${index + 1} is not a history event: ${line.slice(0, 80)}`);
    }
    events.push({
      ...(raw as unknown as HistoryEvent),
      at: BigInt(raw.at as string),
      ...(raw.deadline === undefined ? {} : { deadline: BigInt(raw.deadline as string) }),
    });
  }
  return events;
}
