import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The identity of an async call chain: what "the same thread" means for re-entrant locks.
 * Code inside `runInChain(fn)` (and inside `using` callbacks) shares one chain id through
 * every await; concurrent chains get different ids and so wait for each other.
 */
const storage = new AsyncLocalStorage<number>();
let lastChain = 0;

/** The current chain's id, or undefined outside any chain. */
export function currentChain(): number | undefined {
  return storage.getStore();
}

/** A chain id never handed out before in this process. */
export function newChain(): number {
  lastChain += 1;
  return lastChain;
}

/** Runs `fn` in the current chain, or in a new one when there is none. */
export function runInChain<T>(fn: () => T): T {
  const chain = storage.getStore();
  return chain === undefined ? storage.run(newChain(), fn) : fn();
}

/** Runs `fn` in the given chain. */
export function runWithChain<T>(chain: number, fn: () => T): T {
  return storage.run(chain, fn);
}
