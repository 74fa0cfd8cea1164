import { AsyncLocalStorage } from 'node:async_hooks';
import { type Context, context, createContextKey, ROOT_CONTEXT } from '@opentelemetry/api';

const PROBE = createContextKey('@lock/otel context storage probe');

/**
 * The AsyncLocalStorage that OpenTelemetry's global context manager reads `context.active()`
 * from, so that a diagnostics TracingChannel can make a span active for a whole call with
 * `bindStore`. OpenTelemetry has no public way to reach it: the API keeps the manager behind a
 * non-public getter, and `AsyncLocalStorageContextManager` (the one `NodeTracerProvider` and the
 * Node SDK register) keeps its storage in a non-public field. So both are looked up defensively,
 * and a storage is only returned once it is seen to drive `context.active()`; anything else (no
 * SDK yet, another context manager) gives `undefined`.
 */
export function contextStorage(): AsyncLocalStorage<Context> | undefined {
  const manager = (context as unknown as { _getContextManager?: () => unknown })._getContextManager?.();
  if (typeof manager !== 'object' || manager === null) return undefined;
  return Object.values(manager).find(
    (value): value is AsyncLocalStorage<Context> => value instanceof AsyncLocalStorage && drives(value),
  );
}

function drives(storage: AsyncLocalStorage<Context>): boolean {
  const probe = ROOT_CONTEXT.setValue(PROBE, true);
  return storage.run(probe, () => context.active() === probe);
}
