import type { LockBackend } from '../backend.js';
import { QuorumError } from '../errors.js';

/**
 * `backend` with its `QuorumError`s naming the key the caller gave rather than the resource the
 * masters were sent (`prefix` + key), as every other error of a locker does: the engine passes a
 * backend's unavailability on as it is. A resource not under `prefix` is named as it is.
 */
export function namingCallerKeys<Backend extends LockBackend>(backend: Backend, prefix: string): Backend {
  const keyOf = (resource: string) =>
    resource.startsWith(prefix) ? resource.slice(prefix.length) : resource;
  const renamed = (error: unknown, resource: string) =>
    error instanceof QuorumError && error.key === resource ? error.withKey(keyOf(resource)) : error;
  const rethrown =
    (resource: string) =>
    (error: unknown): never => {
      throw renamed(error, resource);
    };
  return {
    ...backend,
    acquire: (resource, ...rest) => backend.acquire(resource, ...rest).catch(rethrown(resource)),
    release: (resource, ...rest) => backend.release(resource, ...rest).catch(rethrown(resource)),
    extend: (resource, ...rest) => backend.extend(resource, ...rest).catch(rethrown(resource)),
    inspect: (resource) => backend.inspect(resource).catch(rethrown(resource)),
    async extendMany(items, ttl) {
      const results = await backend.extendMany(items, ttl);
      return results.map((result, index) => renamed(result, items[index]!.resource) as typeof result);
    },
  };
}
