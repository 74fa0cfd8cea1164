import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { eventToJson, type HistoryEvent, parseEvents } from './events.js';

/** Options of a `HistoryRecorder`. */
export interface HistoryRecorderOptions {
  /**
   * A JSON-lines file each event is appended to as it happens (written synchronously, so a
   * process killed mid-run leaves every event it recorded). Default: none, memory only.
   */
  file?: string;
}

/** What `acquired` needs of a held lock: `@lock/core`'s `Lock` fits. */
export interface HeldLock {
  readonly key: string;
  /** Recorded on every event when present, so two owners in one process are told apart. */
  readonly owner?: string;
  readonly fence: number;
  /** `performance.now()` deadline of the hold. */
  readonly validUntil: number;
}

/** The hrtime (ns) that a `performance.now()` reading (ms) of this process stands for. */
export function hrtimeOf(performanceMs: number): bigint {
  const offsetMs = performanceMs - performance.now();
  return process.hrtime.bigint() + BigInt(Math.round(offsetMs * 1e6));
}

/** Records one process's lock events, in memory and optionally to a file. */
export class HistoryRecorder {
  readonly events: HistoryEvent[] = [];
  private fd: number | undefined;

  constructor(
    /** The process or worker id stamped on every event. */
    readonly process: string,
    options: HistoryRecorderOptions = {},
  ) {
    if (typeof process !== 'string' || process === '') {
      throw new TypeError(`process must be a non-empty string, got ${JSON.stringify(process)}`);
    }
    if (options.file !== undefined) {
      mkdirSync(dirname(options.file), { recursive: true });
      this.fd = openSync(options.file, 'a');
    }
  }

  /** Records any event; `at` defaults to now. */
  record(event: Omit<HistoryEvent, 'process' | 'at'> & { at?: bigint }): HistoryEvent {
    const full: HistoryEvent = { ...event, process: this.process, at: event.at ?? process.hrtime.bigint() };
    this.events.push(full);
    if (this.fd !== undefined) writeSync(this.fd, `${eventToJson(full)}\n`);
    return full;
  }

  /**
   * A grant of `lock`, now, with its fence and deadline. A lock its watchdog renews has no fixed
   * deadline: pass `{ renewed: true }`, and record `lost` when its signal aborts.
   */
  acquired(lock: HeldLock, options: { renewed?: boolean } = {}): HistoryEvent {
    return this.record({
      op: 'acquire',
      ...holder(lock),
      fence: lock.fence,
      ...(options.renewed ? {} : { deadline: hrtimeOf(lock.validUntil) }),
    });
  }

  /**
   * A successful `extend()` of `lock`, now (call it when extend resolves): the hold's deadline
   * becomes the handle's new `validUntil`. Recording it as another grant would count as a
   * re-entry, which takes one more release to end. A hold recorded with `{ renewed: true }`
   * keeps having none.
   */
  extended(lock: HeldLock): HistoryEvent {
    return this.record({
      op: 'extend',
      ...holder(lock),
      fence: lock.fence,
      deadline: hrtimeOf(lock.validUntil),
    });
  }

  /** Giving up `lock`, now (call it before `release()`: the belief ends when release starts). */
  released(lock: Pick<HeldLock, 'key' | 'owner'>): HistoryEvent {
    return this.record({ op: 'release', ...holder(lock) });
  }

  /** Learning that `lock` was lost, now. */
  lost(lock: Pick<HeldLock, 'key' | 'owner'>): HistoryEvent {
    return this.record({ op: 'lost', ...holder(lock) });
  }

  /** A write to the protected resource that just came back, accepted or refused, with the fence it carried. */
  wrote(lock: Pick<HeldLock, 'key' | 'owner' | 'fence'>, accepted: boolean, resource?: string): HistoryEvent {
    return this.record({
      op: 'write',
      ...holder(lock),
      fence: lock.fence,
      accepted,
      ...(resource === undefined ? {} : { resource }),
    });
  }

  /** Closes the file. Idempotent. */
  close(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
  }
}

function holder(lock: Pick<HeldLock, 'key' | 'owner'>): { lock: string; owner?: string } {
  return { lock: lock.key, ...(lock.owner === undefined ? {} : { owner: lock.owner }) };
}

/** Reads and merges histories: JSON-lines files, or every `*.jsonl` file of a directory. */
export function readHistory(...paths: string[]): HistoryEvent[] {
  return paths.flatMap((path) => {
    const files = statSync(path).isDirectory()
      ? readdirSync(path)
          .filter((name) => name.endsWith('.jsonl'))
          .sort()
          .map((name) => join(path, name))
      : [path];
    return files.flatMap((file) => parseEvents(readFileSync(file, 'utf8'), file));
  });
}
