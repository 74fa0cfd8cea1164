/**
 * `pnpm bench soak`: heap growth under a long mixed load, per protocol and peer. Each subject in
 * turn, on redis-servers started for it alone, runs the mix (workload.ts) for a warm-up, then for
 * SOAK_SECONDS with the heap read after forced GC before and after. Prints the table and writes
 * bench/results/soak.json. Method: bench/README.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describeMachine, type Machine, machineLine } from '../machine.js';
import { heapAfterGc } from './heap.js';
import { renderSoak, type SoakResult, type SoakRun } from './report.js';
import { makeSoakSubject, type SoakKind, soakKinds, startServers } from './subjects.js';
import { mix, runMix } from './workload.js';

/** A positive number of seconds from the environment variable `name`, or `fallback` when unset. */
function seconds(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`${name}=${raw}: expected a positive number of seconds`);
  return value;
}

/** The subjects named in SOAK_SUBJECTS (comma-separated), or all of them. */
function chosenKinds(): readonly SoakKind[] {
  const raw = process.env.SOAK_SUBJECTS;
  if (raw === undefined || raw === '') return soakKinds;
  return raw.split(',').map((name) => {
    const kind = soakKinds.find((known) => known === name.trim());
    if (!kind)
      throw new Error(`SOAK_SUBJECTS: unknown subject "${name}"; the subjects are ${soakKinds.join(', ')}`);
    return kind;
  });
}

const soakSeconds = seconds('SOAK_SECONDS', 60);
const warmupSeconds = seconds('SOAK_WARMUP_SECONDS', Math.min(10, soakSeconds));
const kinds = chosenKinds();
/** The goal: flat means less than this many MB of heap growth per million acquisitions. */
const FLAT_MB_PER_MILLION = 2;
const MB = 2 ** 20;
const resultsFile = fileURLToPath(new URL('../../results/soak.json', import.meta.url));

function progress(message: string): void {
  process.stderr.write(`[soak] ${message}\n`);
}

/** Warm-up, then the measured soak, on `kind`'s own servers. */
async function soakOne(kind: SoakKind): Promise<{ machine: Machine; result: SoakResult }> {
  const servers = await startServers(kind);
  try {
    const machine = await describeMachine(servers.admin);
    const subject = makeSoakSubject(kind, servers, mix.renewalTtl);
    try {
      progress(`${kind}: warm-up, ${warmupSeconds} s`);
      const warmup = await runMix(subject, 'warmup', warmupSeconds * 1_000);
      const heapStart = await heapAfterGc();
      progress(`${kind}: soak, ${soakSeconds} s (heap after GC ${(heapStart / MB).toFixed(1)} MB)`);
      const started = performance.now();
      const counts = await runMix(subject, 'soak', soakSeconds * 1_000);
      const elapsed = (performance.now() - started) / 1_000;
      const heapEnd = await heapAfterGc();
      const growth = (heapEnd - heapStart) / MB;
      const perMillion = growth / (counts.acquisitions / 1e6);
      progress(
        `${kind}: ${counts.acquisitions} acquisitions, heap ${growth >= 0 ? '+' : ''}${growth.toFixed(2)} MB`,
      );
      for (const sample of [...warmup.errorSamples, ...counts.errorSamples])
        progress(`${kind}: error: ${sample}`);
      const result: SoakResult = {
        ...counts,
        servers: servers.label,
        supports: subject.supports,
        seconds: elapsed,
        warmupErrors: warmup.errors,
        heapStartMB: heapStart / MB,
        heapEndMB: heapEnd / MB,
        growthMB: growth,
        growthPerMillionMB: perMillion,
        flat: Number.isFinite(perMillion) && perMillion < FLAT_MB_PER_MILLION,
      };
      return { machine, result };
    } finally {
      await subject.close();
    }
  } finally {
    await servers.stop();
  }
}

const run: SoakRun = {
  date: new Date().toISOString(),
  settings: { soakSeconds, warmupSeconds, flatMBPerMillion: FLAT_MB_PER_MILLION, mix },
  machine: undefined,
  results: {},
  failed: {},
};
progress(
  `${kinds.length} subjects, one after another: ${warmupSeconds} s warm-up + ${soakSeconds} s soak each`,
);
for (const kind of kinds) {
  try {
    const { machine, result } = await soakOne(kind);
    run.machine ??= machine;
    run.results[kind] = result;
  } catch (error) {
    // One subject that cannot run (a package mid-edit, say) must not cost the others' figures.
    run.failed[kind] = String(error);
    progress(`${kind}: FAILED: ${String(error)}`);
  }
}

process.stdout.write(`${renderSoak(run)}\n`);
if (run.machine) process.stdout.write(`\n${machineLine(run.machine)}\n`);
mkdirSync(fileURLToPath(new URL('../../results/', import.meta.url)), { recursive: true });
writeFileSync(resultsFile, `${JSON.stringify(run, null, 2)}\n`);
process.stdout.write(`results written to ${resultsFile}\n`);
