import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { Lock, Locker } from '@lock/core';

/**
 * Resolves after `count` watchdog renewals (the `lock:extend` events with `renewal: true`), of
 * `key` only when one is given: waiting on renewals instead of sleeping for their interval.
 */
export function renewals(count: number, key?: string): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    const onExtend = (message: unknown) => {
      const event = message as { key: string; renewal: boolean };
      if (!event.renewal || (key !== undefined && event.key !== key) || ++seen < count) return;
      unsubscribe('lock:extend', onExtend);
      resolve();
    };
    subscribe('lock:extend', onExtend);
  });
}

/** Resolves on the next watchdog round of this process that failed (a `lock:renew` event with `failed: true`). */
export function failedRenewal(): Promise<void> {
  return new Promise((resolve) => {
    const onRenew = (message: unknown) => {
      if (!(message as { failed: boolean }).failed) return;
      unsubscribe('lock:renew', onRenew);
      resolve();
    };
    subscribe('lock:renew', onRenew);
  });
}

/**
 * Takes `key` on `locker` (renewed, at the locker's ttl) until the watchdog has renewed it
 * `count` times, then releases it: a window sized by real renewals rather than by a sleep, so a
 * renewal the process had armed before it began was due within it. Answers the size of every
 * renewal round of the process that Redis answered meanwhile: `[1, 1]` for `count` 2 when the
 * watchdogs renewed nothing else.
 */
export async function controlRenewals(locker: Locker, count: number, key = 'control'): Promise<number[]> {
  const rounds: number[] = [];
  const onRenew = (message: unknown) => {
    const round = message as { size: number; failed: boolean };
    if (!round.failed) rounds.push(round.size);
  };
  subscribe('lock:renew', onRenew);
  let lock: Lock;
  try {
    lock = await locker.acquire(key);
    // Listening before any timer can run: the first renewal is a third of the lease away.
    await renewals(count, key);
  } finally {
    unsubscribe('lock:renew', onRenew);
  }
  await lock.release();
  return rounds;
}
