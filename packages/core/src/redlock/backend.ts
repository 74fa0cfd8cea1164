import { isPermissionError } from '../acl-refusal.js';
import type { LockBackend } from '../backend.js';
import { acquireOnQuorum } from './acquire.js';
import { releaseLeftovers } from './cleanup.js';
import { decodeTokens } from './composite-token.js';
import { masterConnections, type OpenContext } from './connections.js';
import { extendOnQuorum } from './extend.js';
import { fanOut } from './fan-out.js';
import { inspectOnQuorum } from './inspect.js';
import { QuorumListeners } from './listen.js';
import { MasterClocks } from './master-clocks.js';
import {
  callTimeout,
  type QuorumBackendOptions,
  type QuorumContext,
  type QuorumStats,
  resolveQuorumOptions,
} from './options.js';
import { validityOf } from './quorum.js';
import { releaseOnQuorum } from './release.js';

/** A RedLock backend: any protocol run on N independent masters, decided by majority. */
export interface QuorumBackend extends LockBackend {
  /** How many masters. */
  readonly nodes: number;
  /** How many must agree: ⌊N/2⌋ + 1. */
  readonly quorum: number;
  /**
   * The longest any one call can take, in ms: an acquire is at most three rounds (the attempt,
   * the fence write-back, the release of what a failed attempt took), each bounded by the node timeout.
   */
  readonly callTimeout: number;
  /** Failures absorbed instead of reported (live counters). */
  readonly stats: Readonly<QuorumStats>;
}

/**
 * RedLock over `clients` (see `QuorumBackendOptions`). Validates every option before anything
 * is sent; never closes the caller's clients, only gives up its use of the subscriber connection
 * each client's lockers share (see `sharedListener`). Listens to each client's connection errors
 * until closed, to name them in its `QuorumError`s.
 */
export function quorumBackend(options: QuorumBackendOptions): QuorumBackend {
  return backendOn(resolveQuorumOptions(options));
}

/**
 * The backend over resolved settings. Internal (not exported by the package): tests build a
 * context with a wrong quorum through it, to show that their checkers catch what that breaks.
 */
export function backendOn(resolved: QuorumContext): QuorumBackend {
  const connections = masterConnections(resolved.clients);
  const clocks = new MasterClocks(resolved.clients, connections, resolved.clockSkew);
  const context: OpenContext = { ...resolved, connections, clocks };
  const { protocol } = context;
  const listeners = new QuorumListeners(context.clients, protocol, context.nodeTimeout);
  return {
    protocol,
    cluster: false,
    fenceKeptOnReentry: true,
    // For a call the engine's deadline gave up on: every master down says why.
    get connectionError() {
      return context.connections.errorOf();
    },
    nodes: context.clients.length,
    quorum: context.quorum,
    callTimeout: callTimeout(context.nodeTimeout),
    stats: context.stats,

    validityOf(ttl) {
      return validityOf(ttl, context.driftFactor);
    },

    acquire(resource, owner, ttl, attempt) {
      protocol.validate(resource, false);
      // A grant one master's release writes is not a quorum: waiters here are only ever named.
      return acquireOnQuorum(context, resource, owner, ttl, attempt && { ...attempt, grantLease: undefined });
    },

    async abandon(resource, owner, attempt) {
      if (!protocol.abandon) return;
      // Every master may have enqueued the owner; one that does not answer drops it by its own lease.
      const outcomes = await fanOut(context.clients, context.nodeTimeout, async (redis) =>
        protocol.abandon?.(redis, resource, owner, attempt),
      );
      // A master's ACL refusing it is the engine's to tell (once, as a warning); outages are not.
      for (const outcome of outcomes) {
        if (outcome.kind === 'failed' && isPermissionError(outcome.error)) throw outcome.error;
      }
    },

    release(resource, owner, token, _handedOn, id, witness) {
      return releaseOnQuorum(context, resource, owner, token, id, witness);
    },

    async undo(resource, owner, token, attempt) {
      const tokens = decodeTokens(token, context.clients.length);
      if (tokens !== null) await releaseLeftovers(context, resource, owner, tokens, { attempt });
    },

    async extend(resource, owner, token, ttl) {
      const [extension] = await extendOnQuorum(context, [{ resource, owner, token }], ttl);
      if (extension instanceof Error) throw extension;
      return extension ?? null;
    },

    extendMany(items, ttl) {
      return extendOnQuorum(context, items, ttl);
    },

    inspect(resource) {
      return inspectOnQuorum(context, resource);
    },

    listen(resource, waiter, onRelease) {
      return listeners.listen(resource, waiter, onRelease);
    },

    close() {
      context.connections.release();
      return listeners.close();
    },
  };
}
