import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { expect, it } from 'vitest';
import { acquireTraced } from '../src/engine/events.js';

// Node 20.6 to 20.12 have no TracingChannel#hasSubscribers (it reads undefined, as nobody), so the
// engine asks the channels themselves whether to trace an acquire call.
it.each(['start', 'end', 'asyncStart', 'asyncEnd', 'error'])(
  'traces acquire calls while anyone subscribes to tracing:lock:acquire:%s alone',
  (name) => {
    const channel = `tracing:lock:acquire:${name}`;
    const listener = () => {};
    expect(acquireTraced()).toBe(false);
    subscribe(channel, listener);
    try {
      expect(acquireTraced()).toBe(true);
    } finally {
      unsubscribe(channel, listener);
    }
    expect(acquireTraced()).toBe(false);
  },
);
