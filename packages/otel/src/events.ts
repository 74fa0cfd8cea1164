import type { LockEvent } from '@lock/core';

export type { AcquireEvent, ExtendEvent, LockEvent, LostEvent, ReleaseEvent } from '@lock/core';

/**
 * The hold an event is about: core's hold number, which every handle of a re-entered hold
 * shares and which tells apart two lockers holding one key as one owner. Core counts holds per
 * copy of the package while the channels are shared by every copy in the process, so the number
 * is qualified by what a hold never changes: protocol, key and owner. The owner is a secret (it
 * releases and extends the lock), read here only to tell holds apart and never recorded.
 */
export function holdId(event: LockEvent): string {
  return `${event.hold}\u0000${event.protocol}\u0000${event.key}\u0000${event.owner}`;
}
