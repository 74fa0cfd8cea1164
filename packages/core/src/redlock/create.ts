import type { LockBackend } from '../backend.js';
import { createEngine, ENGINE_OPTIONS, type EngineOptions } from '../engine/engine.js';
import { orDefault, refuseUnknown } from '../engine/options.js';
import type { Locker } from '../types.js';
import { backendOn } from './backend.js';
import { type DistinctServers, distinctServers } from './distinct-servers.js';
import { type QuorumBackendOptions, resolveQuorumOptions } from './options.js';

/** Options of `createRedlock`: the masters and how to poll them, plus the engine's defaults. */
export interface RedlockOptions extends QuorumBackendOptions, EngineOptions {
  /** Monotonic clock in ms, shared by the engine's deadlines and each attempt's validity. Default: `performance.now`. */
  readonly clock?: () => number;
  /**
   * How long one call may take before it gives up with `LockUnavailableError`, in ms. Each
   * master is already bounded by `nodeTimeout` and an acquire is at most three rounds, so the
   * default lets every call finish what its masters may still answer. Default: 3 × `nodeTimeout` + 50.
   */
  readonly commandTimeout?: number;
}

const BACKEND_OPTIONS = ['clients', 'protocol', 'nodeTimeout', 'driftFactor', 'clockSkew'] as const;
/** `createLocker`'s name for the connection, refused as `clients`. */
const CLIENTS_NAMES = { redis: 'clients' };

/**
 * A Locker over N independent masters (RedLock): the same interface as `createLocker`, each
 * acquisition granted only by a majority within its validity, renewals counted by majority,
 * and fences that strictly increase across owners (a quorum max-register). Beside its first
 * acquire or inspect it checks that no two clients reach the same redis-server, and refuses
 * that call and every later one with `InvalidOptionError` if two do; so does a later check of a
 * master that did not answer, for the call beside it too.
 */
export function createRedlock(options: RedlockOptions): Locker {
  refuseUnknown(options, [...BACKEND_OPTIONS, ...ENGINE_OPTIONS], 'the RedLock options', CLIENTS_NAMES);
  const { clients, protocol, nodeTimeout, driftFactor, clockSkew, ...engine } = options;
  const context = resolveQuorumOptions({
    clients,
    protocol,
    nodeTimeout,
    driftFactor,
    clockSkew,
    clock: engine.clock,
  });
  const backend = backendOn(context);
  const servers = distinctServers(context.clients, context.nodeTimeout);
  const checked: LockBackend = {
    ...backend,
    // A spread copies a getter's value once: the engine reads it at each failure.
    get connectionError() {
      return backend.connectionError;
    },
    acquire(resource, owner, ttl, attempt) {
      if (servers.refusal) return Promise.reject(servers.refusal);
      const check = servers.check();
      const acquiring = backend.acquire(resource, owner, ttl, attempt);
      if (!check) return acquiring;
      return besideCheck(check, servers, acquiring, (reply) => {
        if (!reply.acquired) return undefined;
        // Given back as the engine gives back a grant: a re-entry's must not take off the outer hold.
        return attempt && backend.undo
          ? backend.undo(resource, owner, reply.token, attempt)
          : backend.release(resource, owner, reply.token);
      });
    },
    inspect(resource) {
      if (servers.refusal) return Promise.reject(servers.refusal);
      const check = servers.check();
      const reading = backend.inspect(resource);
      return check ? besideCheck(check, servers, reading, () => undefined) : reading;
    },
  };
  try {
    // Each master is already bounded by the node timeout: the engine's own deadline must not cut
    // a call short while its masters are still within theirs.
    return createEngine(checked, {
      ...engine,
      commandTimeout: orDefault(engine.commandTimeout, backend.callTimeout),
    });
  } catch (error) {
    // Nothing was sent: closing only takes off what the backend listens to on the clients.
    void backend.close();
    throw error;
  }
}

/**
 * Calls made while the masters are checked run beside the check rather than after it, so that it
 * costs no round of its own: their answer waits for the check, and what a refused acquire took
 * is given back.
 */
async function besideCheck<T>(
  check: Promise<void>,
  servers: DistinctServers,
  call: Promise<T>,
  giveBack: (answer: T) => Promise<unknown> | undefined,
): Promise<T> {
  const [answer] = await Promise.allSettled([call, check]);
  if (servers.refusal) {
    if (answer.status === 'fulfilled') await giveBack(answer.value)?.catch(() => {});
    throw servers.refusal;
  }
  if (answer.status === 'rejected') throw answer.reason;
  return answer.value;
}
