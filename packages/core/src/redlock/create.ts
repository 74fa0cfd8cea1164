import { createEngine, ENGINE_OPTIONS, type EngineOptions } from '../engine/engine.js';
import { refuseUnknown } from '../engine/options.js';
import type { Locker } from '../types.js';
import { quorumBackend } from './backend.js';
import type { QuorumBackendOptions } from './options.js';

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

const BACKEND_OPTIONS = ['clients', 'protocol', 'nodeTimeout', 'driftFactor'] as const;

/**
 * A Locker over N independent masters (RedLock): the same interface as `createLocker`, each
 * acquisition granted only by a majority within its validity, renewals counted by majority,
 * and fences that strictly increase across owners (a quorum max-register).
 */
export function createRedlock(options: RedlockOptions): Locker {
  refuseUnknown(options, [...BACKEND_OPTIONS, ...ENGINE_OPTIONS], 'the RedLock options');
  const { clients, protocol, nodeTimeout, driftFactor, ...engine } = options;
  const backend = quorumBackend({ clients, protocol, nodeTimeout, driftFactor, clock: engine.clock });
  // Each master is already bounded by the node timeout: the engine's own deadline must not cut
  // a call short while its masters are still within theirs.
  return createEngine(backend, { ...engine, commandTimeout: engine.commandTimeout ?? backend.callTimeout });
}
