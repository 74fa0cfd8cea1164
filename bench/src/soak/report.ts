import type { Machine } from '../machine.js';
import { table } from '../report.js';
import type { SoakSubject } from './subjects.js';
import type { Mix, SoakCounts } from './workload.js';

/** One subject's soak. */
export interface SoakResult extends SoakCounts {
  readonly servers: string;
  readonly supports: SoakSubject['supports'];
  /** Length of the measured soak, in s. */
  readonly seconds: number;
  readonly warmupErrors: number;
  /** Heap used after forced GC, after the warm-up and after the soak, in MB (2^20 bytes). */
  readonly heapStartMB: number;
  readonly heapEndMB: number;
  readonly growthMB: number;
  /** Growth scaled to a million acquisitions. */
  readonly growthPerMillionMB: number;
  /** Whether the growth per million acquisitions is under the goal. */
  readonly flat: boolean;
}

/** A whole soak run, as written to bench/results/soak.json. */
export interface SoakRun {
  readonly date: string;
  readonly settings: {
    readonly soakSeconds: number;
    readonly warmupSeconds: number;
    readonly flatMBPerMillion: number;
    readonly mix: Mix;
  };
  machine: Machine | undefined;
  readonly results: Partial<Record<string, SoakResult>>;
  /** Subjects that could not run, with the error that stopped them. */
  readonly failed: Partial<Record<string, string>>;
}

/** `value`, or 'n/a' when the subject cannot do what the column counts. */
const when = (supported: boolean, value: number) => (supported ? value : 'n/a');

/** The printed report: the table, then any subject that failed. */
export function renderSoak(run: SoakRun): string {
  const { soakSeconds, warmupSeconds, flatMBPerMillion } = run.settings;
  const rows = Object.entries(run.results).flatMap(([name, r]) =>
    r
      ? [
          [
            name,
            r.servers,
            r.acquisitions,
            r.acquisitions / r.seconds,
            when(r.supports.signal, r.aborted),
            r.timedOut,
            when(r.supports.reentry, r.reentered),
            when(r.supports.renewal, r.renewed),
            when(r.supports.renewal, r.lost),
            r.errors + r.warmupErrors,
            r.heapStartMB,
            r.heapEndMB,
            r.growthMB,
            r.growthPerMillionMB,
            r.flat ? 'yes' : 'NO',
          ],
        ]
      : [],
  );
  const failed = Object.entries(run.failed).map(([name, error]) => `${name}: FAILED: ${error}`);
  return [
    table(
      `Soak: ${soakSeconds} s of mixed work per subject after a ${warmupSeconds} s warm-up; heap used after forced GC`,
      [
        'subject',
        'servers',
        'acquisitions',
        'acq/s',
        'aborted',
        'timed out',
        're-entered',
        'renewed',
        'lost',
        'errors',
        'heap start MB',
        'heap end MB',
        'growth MB',
        'MB per 1M acq',
        `flat (< ${flatMBPerMillion})`,
      ],
      rows,
    ),
    ...failed,
  ].join('\n');
}
