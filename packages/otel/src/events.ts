import type { LockEvent } from '@lock/core';

export type { AcquireEvent, ExtendEvent, LockEvent, LostEvent, ReleaseEvent } from '@lock/core';

/**
 * The hold an event is about: one owner of one key, under one protocol. The owner is a secret
 * (it releases and extends the lock), read here only to tell holds apart and never recorded.
 */
export function holdId(event: LockEvent): string {
  return `${event.protocol}\u0000${event.key}\u0000${event.owner}`;
}
