import type { SoakSubject } from './subjects.js';

/** The mixed work of a soak: concurrent loops of acquire + release, with the cases that leak when they leak. */
export interface Mix {
  /** Loops that each take a fresh key of their own every time (uncontended). */
  readonly privateLoops: number;
  /** Loops that contend on the hot keys. */
  readonly hotLoops: number;
  readonly hotKeys: number;
  /** Fixed lease of every section, in ms. */
  readonly ttl: number;
  /** Wait of a private section, in ms: ample, the key is free. */
  readonly privateWait: number;
  /** Wait of a hot section, in ms: short, so some run out. */
  readonly hotWait: number;
  /** Wait of the timeout case, in ms: far shorter than the lease of the hold it meets. */
  readonly shortWait: number;
  /** Delays in ms after which the abort case aborts its waiter, used in turn. */
  readonly abortAfter: readonly number[];
  /** Every how many iterations a private loop re-enters instead (subjects with re-entry). */
  readonly reentryEvery: number;
  /** Every how many iterations a private loop holds a key and meets it with an aborted and a timed-out waiter. */
  readonly blockedEvery: number;
  /**
   * Every how many iterations a private loop holds a renewed lock past its lease (subjects with
   * renewal). The loops are staggered over the period, so renewals spread out and a short run has some.
   */
  readonly renewalEvery: number;
  /** Lease of the renewal case, in ms, renewed every third of it. */
  readonly renewalTtl: number;
  /** How long the renewal case holds, in ms: past `renewalTtl`. */
  readonly renewalHoldMs: number;
}

export const mix: Mix = {
  privateLoops: 40,
  hotLoops: 10,
  hotKeys: 2,
  ttl: 5_000,
  privateWait: 1_000,
  hotWait: 50,
  shortWait: 5,
  abortAfter: [1, 5],
  reentryEvery: 10,
  blockedEvery: 50,
  renewalEvery: 1_000,
  renewalTtl: 600,
  renewalHoldMs: 800,
};

/** What a stretch of the mix did. */
export interface SoakCounts {
  /** Acquisitions that succeeded, re-entries included. */
  acquisitions: number;
  /** Waits stopped by their caller's signal. */
  aborted: number;
  /** Waits that ran out (hot keys, and the short-wait case). */
  timedOut: number;
  /** Acquisitions that re-entered a hold of the same caller. */
  reentered: number;
  /** Holds kept past their lease by renewal. */
  renewed: number;
  /** Renewed holds that were lost before their release. */
  lost: number;
  /** Anything else that went wrong; `errorSamples` keeps the first few messages. */
  errors: number;
  errorSamples: string[];
}

const ERROR_SAMPLES = 5;

function emptyCounts(): SoakCounts {
  return {
    acquisitions: 0,
    aborted: 0,
    timedOut: 0,
    reentered: 0,
    renewed: 0,
    lost: 0,
    errors: 0,
    errorSamples: [],
  };
}

/** Runs the mix on `subject` for `durationMs`, naming keys after `phase` so phases share none. */
export async function runMix(subject: SoakSubject, phase: string, durationMs: number): Promise<SoakCounts> {
  const counts = emptyCounts();
  const deadline = performance.now() + durationMs;
  const loop = async (body: (iteration: number) => Promise<void>) => {
    for (let iteration = 0; performance.now() < deadline; iteration++) {
      try {
        await body(iteration);
      } catch (error) {
        counts.errors++;
        if (counts.errorSamples.length < ERROR_SAMPLES) counts.errorSamples.push(String(error));
      }
    }
  };
  const work = new Work(subject, counts);
  await Promise.all([
    ...Array.from({ length: mix.privateLoops }, (_, index) =>
      loop((iteration) => work.private(`soak:${phase}:p:${index}:${iteration}`, iteration, index)),
    ),
    ...Array.from({ length: mix.hotLoops }, (_, index) =>
      loop(() => work.hot(`soak:${phase}:hot:${index % mix.hotKeys}`)),
    ),
  ]);
  return counts;
}

/** Fails the section it is given to: a waiter's critical section must never run while the key is held. */
async function overlap(): Promise<void> {
  throw new Error('a waiter entered a section while the key was held');
}

/** The cases of the mix, on one subject, counted. */
class Work {
  constructor(
    private readonly subject: SoakSubject,
    private readonly counts: SoakCounts,
  ) {}

  /** A signal of this call alone, as a request handler passes, when the subject takes one. */
  private perCall(): AbortSignal | undefined {
    return this.subject.supports.signal ? new AbortController().signal : undefined;
  }

  /** One iteration of private loop `index` on its fresh `key`: mostly a plain section, in turn the other cases. */
  async private(key: string, iteration: number, index: number): Promise<void> {
    const { supports } = this.subject;
    const stagger = Math.floor((index * mix.renewalEvery) / mix.privateLoops);
    if (supports.renewal && (iteration + stagger) % mix.renewalEvery === 0) return this.renewal(key);
    if (iteration % mix.blockedEvery === mix.blockedEvery - 1) return this.blocked(key, iteration);
    if (supports.reentry && iteration % mix.reentryEvery === mix.reentryEvery - 1) return this.reentry(key);
    if (!(await this.plain(key, mix.privateWait))) throw new Error(`${key}: a fresh key was busy`);
  }

  async hot(key: string): Promise<void> {
    if (!(await this.plain(key, mix.hotWait))) this.counts.timedOut++;
  }

  private async plain(key: string, wait: number): Promise<boolean> {
    const acquired = await this.subject.section(
      key,
      { ttl: mix.ttl, wait, signal: this.perCall() },
      async () => {},
    );
    if (acquired) this.counts.acquisitions++;
    return acquired;
  }

  private async reentry(key: string): Promise<void> {
    await this.subject.reenter(key, { ttl: mix.ttl, wait: mix.privateWait, signal: this.perCall() });
    this.counts.acquisitions += 2;
    this.counts.reentered++;
  }

  private async renewal(key: string): Promise<void> {
    const held = await this.subject.renewed(key, {
      ttl: mix.renewalTtl,
      holdMs: mix.renewalHoldMs,
      signal: this.perCall(),
    });
    this.counts.acquisitions++;
    if (held) this.counts.renewed++;
    else this.counts.lost++;
  }

  /** Holds `key` while another caller waits for it and is aborted, and a third's wait runs out. */
  private async blocked(key: string, iteration: number): Promise<void> {
    const options = { ttl: mix.ttl, wait: mix.privateWait, signal: this.perCall() };
    const acquired = await this.subject.section(key, options, async () => {
      this.counts.acquisitions++;
      if (this.subject.supports.signal) await this.abortedWait(key, iteration);
      const shortWait = { ttl: mix.ttl, wait: mix.shortWait, signal: this.perCall() };
      if (await this.subject.section(key, shortWait, overlap)) throw new Error(`${key}: taken while held`);
      this.counts.timedOut++;
    });
    if (!acquired) throw new Error(`${key}: a fresh key was busy`);
  }

  private async abortedWait(key: string, iteration: number): Promise<void> {
    const controller = new AbortController();
    const delay = mix.abortAfter[Math.floor(iteration / mix.blockedEvery) % mix.abortAfter.length] ?? 0;
    const waiting = this.subject.section(
      key,
      { ttl: mix.ttl, wait: 10 * mix.ttl, signal: controller.signal },
      overlap,
    );
    setTimeout(() => controller.abort(), delay);
    try {
      await waiting;
    } catch (error) {
      if (!controller.signal.aborted) throw error;
      this.counts.aborted++;
      return;
    }
    throw new Error(`${key}: a wait of ${10 * mix.ttl} ms ended before its abort`);
  }
}
