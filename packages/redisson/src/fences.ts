import type { AcquireReply } from '@lock/core';

/**
 * Remembers the fence of each hold's first acquisition so that re-entries report it again: a
 * re-entrant handle shares its hold's fence. Only this client can re-enter its own owners, so
 * its memory is enough; the entry goes when the hold is freed. Formats that store no fence
 * (RLock, fair lock) can therefore report the holder's fence only to the client that holds it.
 */
export class FirstFences {
  private readonly first = new Map<string, number>();

  settle(resource: string, owner: string, reply: AcquireReply): AcquireReply {
    if (!reply.acquired) return reply;
    const key = `${owner}\n${resource}`;
    if (reply.holds === 1) {
      this.first.set(key, reply.fence);
      return reply;
    }
    const fence = this.first.get(key);
    return fence === undefined ? reply : { ...reply, fence };
  }

  /** The first fence of `owner`'s hold of `resource`, when this client took it. */
  of(resource: string, owner: string): number | null {
    return this.first.get(`${owner}\n${resource}`) ?? null;
  }

  forget(resource: string, owner: string): void {
    this.first.delete(`${owner}\n${resource}`);
  }
}
