import { AsyncLocalStorage } from 'node:async_hooks';
import type { Channel } from 'node:diagnostics_channel';
import type { RenewEvent } from '@lock/core';
import { acquireTracing, lockEvents } from '@lock/core';
import type { Context } from '@opentelemetry/api';
import { type AcquireCall, type Acquisition, Acquisitions } from './acquisitions.js';
import { ATTR_ERROR_TYPE, ATTR_LOCK_PROTOCOL } from './attributes.js';
import { type ActiveContext, bindContext, runningCallerContext } from './context-binding.js';
import { contextStorage } from './context-storage.js';
import type { AcquireEvent, ExtendEvent, LostEvent, ReleaseEvent } from './events.js';
import { Holds } from './holds.js';
import { joinMeterProvider } from './meter-providers.js';
import { checkOptions, type InstrumentLocksOptions } from './options.js';
import { OTHER_ERROR } from './outcome.js';
import { shielded, warn } from './shielded.js';
import { createTelemetry } from './telemetry.js';

/** What `instrumentLocks` returns. */
export interface LockInstrumentation {
  /**
   * Whether acquire spans are active while the call runs, so that Redis command spans (from
   * `@opentelemetry/instrumentation-ioredis`) nest under them. False when the global context
   * manager was not an `AsyncLocalStorageContextManager` when `instrumentLocks` was called:
   * the spans are still recorded, as children of the caller's span.
   */
  readonly activeSpans: boolean;
  /** Stops recording. Spans still open end then, without an outcome. Calling it again does nothing. */
  disable(): void;
}

/**
 * Records every lock of every `@lock/*` locker in this process as OpenTelemetry spans and
 * metrics, from the diagnostics channels core publishes on (which cost nothing until this
 * subscribes). Call it once, after the OpenTelemetry SDK has started. Instrumentations called
 * more than once each record every lock, and each `disable()` stops only its own: two on one
 * meter provider (the global one, when given none) count every lock twice in every metric, which
 * the second reports with a diag warning.
 */
export function instrumentLocks(options: InstrumentLocksOptions = {}): LockInstrumentation {
  const telemetry = createTelemetry(checkOptions(options));
  const leaveMeterProvider = joinMeterProvider(telemetry.meterProvider, telemetry.meter);
  const acquisitions = new Acquisitions(telemetry);
  const holds = new Holds(telemetry);
  // The acquisition a `lock:acquire` event belongs to: the call it is published in.
  const calls = new AsyncLocalStorage<Acquisition | undefined>();
  const otelStorage = contextStorage();
  const ofCall = shielded('start an acquire span', (call: AcquireCall) => acquisitions.of(call));

  const stores: BoundStore[] = [bound(calls, ofCall)];
  if (otelStorage) stores.push(sharedBinding(otelStorage, (call) => ofCall(call)?.active));
  else warn('@lock/otel: no AsyncLocalStorageContextManager registered; acquire spans will not be active');
  const subscriptions: [Channel, Listener][] = [
    // Core's acquire calls always return a promise: every call ends with asyncEnd.
    [
      acquireTracing.asyncEnd,
      listener('end an acquire span', (call: AcquireCall) => acquisitions.finish(call)),
    ],
    [
      lockEvents.acquire,
      listener('record an acquisition', (event: AcquireEvent) => {
        const acquisition = calls.getStore();
        if (acquisition) acquisitions.granted(acquisition, event);
        holds.acquired(
          event,
          acquisition?.parent ?? runningCallerContext(),
          acquisition?.pattern ?? telemetry.pattern(event.key),
          acquisition?.span,
        );
      }),
    ],
    [lockEvents.release, listener('record a release', (event: ReleaseEvent) => holds.released(event))],
    [lockEvents.extend, listener('record an extension', (event: ExtendEvent) => holds.extended(event))],
    [lockEvents.lost, listener('record a lost lock', (event: LostEvent) => holds.lost(event))],
    [
      lockEvents.renew,
      listener('record a renewal batch', (event: RenewEvent) =>
        telemetry.metrics.renewalBatchSize.record(event.size, {
          [ATTR_LOCK_PROTOCOL]: event.protocol,
          // A failed round renewed none or only part of its batch: kept apart from the rounds that
          // renewed it all. Core says only that it failed, hence the conventions' fallback type.
          ...(event.failed && { [ATTR_ERROR_TYPE]: OTHER_ERROR }),
        }),
      ),
    ],
  ];
  for (const store of stores) store.bind();
  for (const [channel, onMessage] of subscriptions) channel.subscribe(onMessage);

  let enabled = true;
  return {
    activeSpans: otelStorage !== undefined,
    disable() {
      if (!enabled) return;
      enabled = false;
      for (const [channel, onMessage] of subscriptions) channel.unsubscribe(onMessage);
      for (const store of stores) store.unbind();
      acquisitions.close();
      holds.close();
      leaveMeterProvider();
    },
  };
}

type Listener = (message: unknown) => void;

interface BoundStore {
  bind(): void;
  unbind(): void;
}

/**
 * A store of this instrumentation's own made current by `acquireTracing.start` for the whole of
 * each acquire call. (Node's typings allow one store type per channel; this binds two.) Unbound,
 * it is disabled too: a store once run stays switched on until then, and Node tags every new
 * async resource of the process with each store switched on.
 */
function bound<T>(store: AsyncLocalStorage<T>, transform: (call: AcquireCall) => T): BoundStore {
  const start = acquireTracing.start as unknown as Channel<T, AcquireCall>;
  return {
    bind: () => start.bindStore(store, transform),
    unbind: () => {
      start.unbindStore(store);
      store.disable();
    },
  };
}

/**
 * OpenTelemetry's context storage, which every instrumentation in the process binds to the same
 * channel: shared, see `bindContext`.
 */
function sharedBinding(storage: AsyncLocalStorage<Context>, use: ActiveContext): BoundStore {
  let unbind: (() => void) | undefined;
  return {
    bind: () => {
      unbind ??= bindContext(storage, use);
    },
    unbind: () => {
      unbind?.();
      unbind = undefined;
    },
  };
}

/** A subscriber for messages of type `T` (core documents each channel's payload). */
function listener<T>(doing: string, fn: (message: T) => void): Listener {
  const safe = shielded(doing, fn);
  return (message) => safe(message as T);
}
