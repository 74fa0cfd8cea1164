/**
 * The protocols a fault test runs over, each on the deployment it is meant for: the token and
 * legacy formats on one server, RedLock (over the token format; it refuses legacy) on three
 * masters (`startMasters(deployment.masters)`). A test parametrized with `it.each(DEPLOYMENTS)`
 * asks the same of each.
 */
import { createLocker, createRedlock, type EngineOptions, type Locker, legacyProtocol } from '@lock/core';
import type { Redis } from 'ioredis';

export type DeploymentName = 'token' | 'legacy ms' | 'legacy s' | 'redlock';

export interface Deployment {
  readonly name: DeploymentName;
  /** Masters the locker needs. */
  readonly masters: number;
  /**
   * Granularity of the ttls the format takes: whole seconds for `legacyProtocol({ unit: 's' })`
   * (src/protocols/legacy/README.md, "ttl must then be whole seconds"), 1 ms otherwise.
   */
  readonly ttlStep: number;
  /** Makes a locker on one client per master. */
  readonly create: (clients: readonly Redis[], options?: EngineOptions) => Locker;
}

export const DEPLOYMENTS: readonly Deployment[] = [
  {
    name: 'token',
    masters: 1,
    ttlStep: 1,
    create: ([redis], options) => createLocker({ redis: redis!, ...options }),
  },
  {
    name: 'legacy ms',
    masters: 1,
    ttlStep: 1,
    create: ([redis], options) =>
      createLocker({ redis: redis!, protocol: legacyProtocol({ unit: 'ms' }), ...options }),
  },
  {
    name: 'legacy s',
    masters: 1,
    ttlStep: 1_000,
    create: ([redis], options) =>
      createLocker({ redis: redis!, protocol: legacyProtocol({ unit: 's' }), ...options }),
  },
  {
    name: 'redlock',
    masters: 3,
    ttlStep: 1,
    create: (clients, options) => createRedlock({ clients, ...options }),
  },
];

export function deployment(name: DeploymentName): Deployment {
  return DEPLOYMENTS.find((candidate) => candidate.name === name)!;
}

/** `ms` rounded up to a ttl the deployment's format takes. */
export function lease(target: Pick<Deployment, 'ttlStep'>, ms: number): number {
  return Math.ceil(ms / target.ttlStep) * target.ttlStep;
}
