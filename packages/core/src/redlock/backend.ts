import type { LockBackend } from '../backend.js';
import { acquireOnQuorum } from './acquire.js';
import { extendOnQuorum } from './extend.js';
import { inspectOnQuorum } from './inspect.js';
import { QuorumListeners } from './listen.js';
import { type QuorumBackendOptions, type QuorumStats, resolveQuorumOptions } from './options.js';
import { releaseOnQuorum } from './release.js';

/** A RedLock backend: any protocol run on N independent masters, decided by majority. */
export interface QuorumBackend extends LockBackend {
  /** How many masters. */
  readonly nodes: number;
  /** How many must agree: ⌊N/2⌋ + 1. */
  readonly quorum: number;
  /** Failures absorbed instead of reported (live counters). */
  readonly stats: Readonly<QuorumStats>;
}

/**
 * RedLock over `clients` (see `QuorumBackendOptions`). Validates every option before anything
 * is sent; never closes the caller's clients, only its own subscriber connections.
 */
export function quorumBackend(options: QuorumBackendOptions): QuorumBackend {
  const context = resolveQuorumOptions(options);
  const { protocol } = context;
  const listeners = new QuorumListeners(context.clients, protocol, context.nodeTimeout);
  return {
    protocol,
    cluster: false,
    nodes: context.clients.length,
    quorum: context.quorum,
    stats: context.stats,

    acquire(resource, owner, ttl) {
      protocol.validate(resource, false);
      return acquireOnQuorum(context, resource, owner, ttl);
    },

    release(resource, owner, token) {
      return releaseOnQuorum(context, resource, owner, token);
    },

    async extend(resource, owner, token, ttl) {
      const [extension] = await extendOnQuorum(context, [{ resource, owner, token }], ttl);
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
      return listeners.close();
    },
  };
}
