import { InvalidOptionError } from '../errors.js';
import type { RedisClient } from '../protocol.js';
import { fanOut } from './fan-out.js';

const RUN_ID = /run_id:(\w+)/;

/** The run id in an `INFO server` reply, if any. */
export function runIdIn(info: string): string | undefined {
  return RUN_ID.exec(info)?.[1];
}

/** What `distinctServers` found, and how to wait for its first check. */
export interface DistinctServers {
  /** Set once two clients were found to reach the same redis-server. */
  readonly refusal: InvalidOptionError | undefined;
  /**
   * Starts a check of the masters not compared yet, unless one runs; answers the check while it
   * runs, the first or a later one of a master that had not answered (the caller holds its answer
   * back until then: a duplicate found refuses it too), else undefined.
   */
  check(): Promise<void> | undefined;
}

/** How soon a master that did not answer the check is asked again. */
const RECHECK_MS = 1_000;

/**
 * Whether any two of `clients` reach the same redis-server (two names of one host, a proxy in
 * front of another client's master): it would count twice toward every majority. Compares each
 * master's `run_id` (INFO server), each master bounded by `nodeTimeout`. A master that does not
 * answer is compared when a later check reaches it, at most every `RECHECK_MS`; one that answers
 * with an error (an ACL denying INFO) is not compared.
 */
export function distinctServers(clients: readonly RedisClient[], nodeTimeout: number): DistinctServers {
  /** Run id by client index, of the masters that answered. */
  const runIds = new Map<number, string | undefined>();
  let checking: Promise<void> | undefined;
  let refusal: InvalidOptionError | undefined;
  let lastRun = Number.NEGATIVE_INFINITY;
  const run = async () => {
    lastRun = performance.now();
    const unseen = clients.flatMap((client, index) => (runIds.has(index) ? [] : [{ client, index }]));
    const outcomes = await fanOut(unseen, nodeTimeout, ({ client }) => client.info('server'));
    outcomes.forEach((outcome, n) => {
      const { index } = unseen[n]!;
      if (outcome.kind === 'ok') runIds.set(index, runIdIn(outcome.value));
      // A master that answers with an error (an ACL denying INFO) cannot be compared, ever.
      else if (outcome.kind === 'failed' && (outcome.error as Error | null)?.name === 'ReplyError')
        runIds.set(index, undefined);
    });
    refusal = sameServer(runIds);
    checking = undefined;
  };
  return {
    get refusal() {
      return refusal;
    },
    check() {
      // A master that does not answer is asked again, but not by every call while it is down.
      if (runIds.size < clients.length && performance.now() - lastRun >= RECHECK_MS) checking ??= run();
      return checking;
    },
  };
}

function sameServer(runIds: ReadonlyMap<number, string | undefined>): InvalidOptionError | undefined {
  const byRunId = new Map<string, number[]>();
  for (const [index, runId] of [...runIds].sort(([a], [b]) => a - b)) {
    if (runId === undefined) continue;
    const same = byRunId.get(runId) ?? [];
    same.push(index);
    byRunId.set(runId, same);
    if (same.length === 2) {
      return new InvalidOptionError(
        'clients',
        `${same.map((i) => `clients[${i}]`).join(' and ')} (the same redis-server, run_id ${runId.slice(0, 8)})`,
        'one client per independent master',
      );
    }
  }
  return undefined;
}
