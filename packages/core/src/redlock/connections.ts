import { type Connection, connectionOf } from '../backends/connection-errors.js';
import type { RedisClient } from '../protocol.js';
import type { NodeOutcome } from './fan-out.js';
import type { MasterClocks } from './master-clocks.js';
import type { QuorumContext } from './options.js';

/**
 * Why masters of a RedLock could not be reached: the `connectionError` of its `QuorumError`s
 * (and of a `LockUnavailableError` its locker's deadline raised). `errors` holds each master's
 * last connection error, sanitised as a single-server locker's (no command, no password), and
 * the message names each with its client: `clients[1]: connect ECONNREFUSED 127.0.0.1:6390`.
 */
export class UnreachableMastersError extends AggregateError {
  override name = 'UnreachableMastersError';
  constructor(
    errors: readonly Error[],
    /** The index in `clients` of the master each of `errors` is from. */
    readonly masters: readonly number[],
  ) {
    super(errors, errors.map((error, n) => `clients[${masters[n]}]: ${error.message}`).join('; '));
  }
}

/** The connection state of each master's client, for as long as a backend on them is open. */
export interface MasterConnections {
  /**
   * The last connection error of each of `masters` whose client is down (all of them by
   * default), or undefined when none is.
   */
  errorOf(masters?: readonly number[]): UnreachableMastersError | undefined;
  /** How many connections of master `index`'s client have closed so far (see `Connection.closes`). */
  closesOf(index: number): number;
  /** Stops listening to the clients, unless other lockers still do (see `connectionOf`). */
  release(): void;
}

/** A quorum context while its backend is open: what it knows of each master's connection. */
export interface OpenContext extends QuorumContext {
  readonly connections: MasterConnections;
  readonly clocks: MasterClocks;
}

/** Listens to each of `clients` as a single-server locker does (one listener per client, counted). */
export function masterConnections(clients: readonly RedisClient[]): MasterConnections {
  const connections: Connection[] = clients.map(connectionOf);
  const all = clients.map((_, index) => index);
  return {
    errorOf(masters = all) {
      const down = masters.flatMap((index) => {
        const error = connections[index]?.error;
        return error ? [{ index, error }] : [];
      });
      if (down.length === 0) return undefined;
      return new UnreachableMastersError(
        down.map(({ error }) => error),
        down.map(({ index }) => index),
      );
    },
    closesOf(index) {
      return connections[index]?.closes ?? 0;
    },
    release() {
      for (const connection of connections) connection.release();
    },
  };
}

/**
 * The options of a `QuorumError` for a round whose `outcomes` these are (one per master): `given`,
 * with the last connection error of each master that did not answer while its client was down.
 * Given as `connectionError`, which `QuorumError` passes on to `LockUnavailableError`: named in
 * the message too.
 */
export function unreachableIn(
  context: OpenContext,
  outcomes: readonly NodeOutcome<unknown>[],
  given?: ErrorOptions,
): (ErrorOptions & { connectionError?: Error }) | undefined {
  const silent = outcomes.flatMap((outcome, index) => (outcome.kind === 'ok' ? [] : [index]));
  const connectionError = context.connections.errorOf(silent);
  return connectionError ? { ...given, connectionError } : given;
}
