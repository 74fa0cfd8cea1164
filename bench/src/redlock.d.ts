// redlock@5.0.0-beta.2 ships types its package.json "exports" hide from NodeNext resolution
// (node-redlock issue #160), so the part of its API the bench uses is declared here.
declare module 'redlock' {
  import type { Cluster, Redis } from 'ioredis';

  export interface Settings {
    readonly driftFactor: number;
    readonly retryCount: number;
    readonly retryDelay: number;
    readonly retryJitter: number;
    readonly automaticExtensionThreshold: number;
  }

  /** Thrown when an operation found no quorum within its retries (for acquire: the lock stayed busy). */
  export class ExecutionError extends Error {}

  export class Lock {
    release(): Promise<unknown>;
  }

  export default class Redlock {
    constructor(clients: Iterable<Redis | Cluster>, settings?: Partial<Settings>);
    acquire(resources: string[], duration: number, settings?: Partial<Settings>): Promise<Lock>;
    using<T>(
      resources: string[],
      duration: number,
      settings: Partial<Settings>,
      routine: (signal: AbortSignal & { error?: Error }) => Promise<T>,
    ): Promise<T>;
  }
}
