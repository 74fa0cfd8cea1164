import type { AsyncLocalStorage } from 'node:async_hooks';
import type { Channel } from 'node:diagnostics_channel';
import { acquireTracing } from '@lock/core';
import { type Context, context, createContextKey } from '@opentelemetry/api';
import type { AcquireCall } from './acquisitions.js';

/** What one instrumentation makes active for an acquire call: its acquire span, or nothing. */
export type ActiveContext = (call: AcquireCall) => Context | undefined;

/** The one binding of a context storage to `acquireTracing.start`, shared by every instrumentation. */
interface SharedBinding {
  /** The instrumentations using it, in the order they were enabled. */
  readonly users: Set<ActiveContext>;
}

/**
 * Kept on `globalThis` (like the diagnostics channels themselves), so that the CommonJS and ESM
 * builds of this package, when a process loads both, share one binding too.
 */
const BINDINGS = Symbol.for('@lock/otel context bindings');

function bindings(): Map<AsyncLocalStorage<Context>, SharedBinding> {
  const global = globalThis as { [BINDINGS]?: Map<AsyncLocalStorage<Context>, SharedBinding> };
  global[BINDINGS] ??= new Map();
  return global[BINDINGS];
}

/** The caller's context of each acquire call, as the shared binding found it: on `globalThis` too. */
const CALLERS = Symbol.for('@lock/otel caller contexts');

function callers(): WeakMap<AcquireCall, Context> {
  const global = globalThis as { [CALLERS]?: WeakMap<AcquireCall, Context> };
  global[CALLERS] ??= new WeakMap();
  return global[CALLERS];
}

/**
 * The context `call` was made in. An instrumentation without active spans binds only a store of
 * its own, and Node enters stores bound later first: once the shared binding (of an instrumentation
 * enabled after it) has made another acquire span active, `context.active()` is no longer the
 * caller's, but the binding noted the caller's before it did.
 */
export function callerContext(call: AcquireCall): Context {
  return callers().get(call) ?? context.active();
}

/** The caller's context, on the context the shared binding makes active for an acquire call. */
const CALLER = createContextKey('@lock/otel caller context');

/**
 * The context the acquire call running now was made in, for an instrumentation enabled since it
 * began, which neither started a span for it nor knows the call: `context.active()` is then the
 * acquire span of another instrumentation (or of one disabled since), not the caller's.
 */
export function runningCallerContext(): Context {
  const active = context.active();
  return (active.getValue(CALLER) as Context | undefined) ?? active;
}

/**
 * Makes `use`'s context current for the whole of each acquire call, through `storage` (the
 * AsyncLocalStorage behind OpenTelemetry's `context.active()`), and returns the function that
 * stops it. Node keeps one binding per storage per channel, and every instrumentation finds the
 * same storage: so the storage is bound once, by the first instrumentation enabled, and unbound
 * when the last one stops. Each call, every instrumentation starts its acquire span in the
 * caller's context (so each is a child of the caller's span), and the context of the first one
 * enabled becomes active, for the Redis commands the call sends.
 */
export function bindContext(storage: AsyncLocalStorage<Context>, use: ActiveContext): () => void {
  const all = bindings();
  let binding = all.get(storage);
  if (!binding) {
    const users = new Set<ActiveContext>();
    binding = { users };
    all.set(storage, binding);
    start().bindStore(storage, (call) => {
      const caller = context.active();
      callers().set(call, caller);
      // Every user starts its acquire span now, while the caller's context is still current.
      let active: Context | undefined;
      for (const user of [...users]) {
        const mine = user(call);
        active ??= mine;
      }
      return (active ?? caller).setValue(CALLER, caller);
    });
  }
  const shared = binding;
  shared.users.add(use);
  return () => {
    if (!shared.users.delete(use) || shared.users.size > 0) return;
    all.delete(storage);
    start().unbindStore(storage);
  };
}

/** Node's typings allow one store type per channel; core's `start` carries two. */
function start(): Channel<Context, AcquireCall> {
  return acquireTracing.start as unknown as Channel<Context, AcquireCall>;
}
