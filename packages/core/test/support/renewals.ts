import { subscribe, unsubscribe } from 'node:diagnostics_channel';

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
