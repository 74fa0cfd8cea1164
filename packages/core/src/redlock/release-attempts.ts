import type { ReleaseReply } from '../protocol.js';
import type { NodeOutcome } from './fan-out.js';
import type { QuorumContext } from './options.js';

/**
 * Undecided releases a backend remembers at most: a retry of one pushed out answers from what
 * the masters say now (`not-owner` where an earlier attempt freed the key), as without this.
 */
export const REMEMBERED_RELEASES = 1024;

/** Per backend, by release id: the masters on which an attempt of that release freed the key. */
const byContext = new WeakMap<QuorumContext, Map<string, boolean[]>>();

const RELEASED: NodeOutcome<ReleaseReply> = { kind: 'ok', value: 'released' };

/** What one attempt of a release learns from, and leaves for, the other attempts of the same id. */
export interface ReleaseAttempt {
  /** For `fanOut`: an answer that came after the attempt gave up on its master. */
  readonly late: (index: number, reply: ReleaseReply) => void;
  /**
   * The attempt's outcomes, with `released` on a master that answers `not-owner` because an
   * earlier attempt freed the key there.
   */
  merge(outcomes: readonly NodeOutcome<ReleaseReply>[]): NodeOutcome<ReleaseReply>[];
  /** The release is decided: no retry of it needs what its attempts freed. */
  forget(): void;
}

/**
 * The attempt of release `id` on the backend of `context`. A release that throws `QuorumError`
 * may land later on the masters it gave up on, and the key is then gone by the time it is
 * retried: without what those late answers said, a retry would find no key and answer
 * `not-owner` for a lock that this very release freed. Where the masters were freed is kept
 * from the first attempt until one of them decides, for the last `REMEMBERED_RELEASES`
 * undecided ids. Without an `id` nothing is kept: such a release is never retried.
 */
export function releaseAttempt(context: QuorumContext, id: string | undefined): ReleaseAttempt {
  const freed = id === undefined ? [] : recall(context, id);
  const late = (index: number, reply: ReleaseReply) => {
    if (reply === 'released') freed[index] = true;
  };
  return {
    late,
    merge: (outcomes) =>
      outcomes.map((outcome, index) => {
        if (outcome.kind !== 'ok') return outcome;
        late(index, outcome.value);
        return outcome.value === 'not-owner' && freed[index] === true ? RELEASED : outcome;
      }),
    forget() {
      if (id !== undefined) byContext.get(context)?.delete(id);
    },
  };
}

/** The masters earlier attempts of `id` freed, kept as the most recent undecided release. */
function recall(context: QuorumContext, id: string): boolean[] {
  let releases = byContext.get(context);
  if (releases === undefined) {
    releases = new Map();
    byContext.set(context, releases);
  }
  const freed = releases.get(id) ?? [];
  releases.delete(id);
  releases.set(id, freed);
  if (releases.size > REMEMBERED_RELEASES) {
    const oldest = releases.keys().next().value;
    if (oldest !== undefined) releases.delete(oldest);
  }
  return freed;
}
