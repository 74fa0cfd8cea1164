import type { EngineOptions, Locker, RedisClient } from '@lock/core';
import type { ContractTarget } from './contract.js';

/** Keys that never expire by design: fence counters and their epoch stamps. */
export const FENCE_COUNTERS = /:fences?(:epoch)?$/;

/** How to build the lockers of a contract run on one deployment. */
export interface TargetPlan {
  /** Makes a locker with engine option overrides (ttl, retry, …) on the deployment under test. */
  readonly create: (overrides: EngineOptions) => Locker;
  /** Clients whose keyspaces are scanned for keys without a TTL at the end. */
  readonly clients: readonly RedisClient[];
  /** Stops the deployment once every locker is closed. */
  readonly stop: () => Promise<void>;
  /** Keys allowed to lack a TTL. Default: `FENCE_COUNTERS`. */
  readonly counters?: RegExp;
  /** Granularity of the format's ttls (see `ContractTarget.ttlStep`). Default: 1. */
  readonly ttlStep?: number;
}

/** A contract target whose lockers all come from `plan.create` and are closed before `plan.stop`. */
export function lockerTarget(plan: TargetPlan): ContractTarget {
  const made: Locker[] = [];
  const make = (overrides: EngineOptions = {}) => {
    const locker = plan.create(overrides);
    made.push(locker);
    return locker;
  };
  return {
    locker: make(),
    other: make(),
    make,
    clients: plan.clients,
    counters: plan.counters ?? FENCE_COUNTERS,
    ttlStep: plan.ttlStep,
    async close() {
      await Promise.all(made.map((locker) => locker.close()));
      await plan.stop();
    },
  };
}
