import { AsyncLocalStorage } from 'node:async_hooks';
import type { Hold } from './hold.js';

/**
 * The critical sections the current code runs inside: what "nested" means for re-entry. A
 * `using` callback runs in a frame naming the hold it took; everything it awaits, and every task
 * it starts, sees that frame. An acquisition re-enters a lock only when a frame for it encloses
 * the caller, so two sibling tasks (a `Promise.all` inside one critical section) never share a
 * lock that neither of them is nested in.
 */
interface Frame {
  readonly parent: Frame | undefined;
  readonly hold: Hold;
  /** The locker that took the hold: a frame of one locker never lets another locker re-enter. */
  readonly issuer: object;
}

const frames = new AsyncLocalStorage<Frame>();

/**
 * The innermost live hold of `resource` taken by `issuer` whose critical section encloses the
 * caller. A hold whose last handle's release was asked for is not live, even when that release
 * failed: a task that outlived its section acquires as an owner of its own, and waits for it.
 */
export function enclosingHold(issuer: object, resource: string): Hold | undefined {
  for (let frame = frames.getStore(); frame !== undefined; frame = frame.parent) {
    const { hold } = frame;
    if (frame.issuer === issuer && hold.resource === resource && !hold.lost && !hold.ending) return hold;
  }
  return undefined;
}

/** Runs `fn` as the critical section of `hold`. */
export function runInSection<T>(issuer: object, hold: Hold, fn: () => T): T {
  return frames.run({ parent: frames.getStore(), hold, issuer }, fn);
}
