import { AsyncLocalStorage } from 'node:async_hooks';
import type { Hold } from './hold.js';

/** The handle a critical section runs with: its hold, and whether it still vouches for it. */
export interface SectionHandle {
  readonly hold: Hold;
  /** Its release was asked for (even one that failed), or its hold was lost. */
  readonly released: boolean;
}

/**
 * The critical sections the current code runs inside: what "nested" means for re-entry. A
 * `using` callback runs in a frame naming the handle it took; everything it awaits, and every
 * task it starts, sees that frame. An acquisition re-enters a lock only when a frame for it
 * encloses the caller, so two sibling tasks (a `Promise.all` inside one critical section) never
 * share a lock that neither of them is nested in.
 */
interface Frame {
  readonly parent: Frame | undefined;
  readonly handle: SectionHandle;
  /** The locker that took the hold: a frame of one locker never lets another locker re-enter. */
  readonly issuer: object;
}

const frames = new AsyncLocalStorage<Frame>();

/**
 * The hold of `resource` taken by `issuer` whose critical section encloses the caller, through
 * the innermost such section whose handle still vouches for it. A section whose handle's release
 * was asked for is over, even when that release failed or the same owner holds the key again
 * through another handle: a task that outlived it acquires as an owner of its own, and waits.
 */
export function enclosingHold(issuer: object, resource: string): Hold | undefined {
  for (let frame = frames.getStore(); frame !== undefined; frame = frame.parent) {
    const { handle } = frame;
    if (frame.issuer === issuer && handle.hold.resource === resource && !handle.released) return handle.hold;
  }
  return undefined;
}

/** Runs `fn` as the critical section of `handle`. */
export function runInSection<T>(issuer: object, handle: SectionHandle, fn: () => T): T {
  return frames.run({ parent: frames.getStore(), handle, issuer }, fn);
}
