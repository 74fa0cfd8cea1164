import type { AcquireTraceContext, Lock } from '@lock/core';
import {
  type Attributes,
  type Context,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import { abandon } from './abandon.js';
import {
  ATTR_ERROR_TYPE,
  ATTR_LOCK_ATTEMPTS,
  ATTR_LOCK_FENCE,
  ATTR_LOCK_HANDOFF,
  ATTR_LOCK_KEY,
  ATTR_LOCK_OUTCOME,
  ATTR_LOCK_PROTOCOL,
  ATTR_LOCK_REENTRY,
  ATTR_LOCK_TTL_MS,
  ATTR_LOCK_WAIT_LIMIT_MS,
  ATTR_LOCK_WAIT_MS,
} from './attributes.js';
import { callerContext } from './context-binding.js';
import type { AcquireEvent } from './events.js';
import { type AcquireOutcome, errorType, failureOutcome } from './outcome.js';
import type { Telemetry } from './telemetry.js';

/** The context object of one traced acquire call: by its end it carries `result` or `error`. */
export type AcquireCall = AcquireTraceContext & { readonly result?: Lock | null; readonly error?: unknown };

/** One acquire call in progress. */
export interface Acquisition {
  readonly span: Span;
  /** The caller's context: the parent of the acquire span and of the hold span. */
  readonly parent: Context;
  /**
   * The caller's context with the acquire span active, for everything the call does; the caller's
   * context alone when the span failed to start.
   */
  readonly active: Context;
  readonly pattern: string;
  readonly metricAttributes: Attributes;
  readonly startedAt: number;
}

/**
 * Outcomes that mean the call failed at its job, as opposed to answering "busy" or being called
 * off. Only these set `error.type`, with the ERROR status, as the semantic conventions pair them:
 * so a busy `tryAcquire()` (null) and a busy `acquire({ wait: 0 })` (a thrown `LockBusyError`)
 * record the same answer.
 */
const FAILED: ReadonlySet<AcquireOutcome> = new Set(['timeout', 'unavailable', 'error']);

/** The `lock.acquire` spans, the wait histogram and the waiting and timeout counts. */
export class Acquisitions {
  private readonly calls = new Map<AcquireCall, Acquisition>();

  constructor(private readonly telemetry: Telemetry) {}

  /** The acquisition of `call`, begun at its first use, which happens in the caller's context. */
  of(call: AcquireCall): Acquisition {
    const known = this.calls.get(call);
    if (known) return known;
    const { metrics } = this.telemetry;
    const pattern = this.telemetry.pattern(call.key);
    const parent = callerContext(call);
    const span = this.telemetry.startSpan(
      `lock.acquire ${pattern}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          [ATTR_LOCK_KEY]: pattern,
          [ATTR_LOCK_PROTOCOL]: call.protocol,
          [ATTR_LOCK_TTL_MS]: call.ttl,
          // An unbounded wait (`wait: Infinity`) has no limit to record: the attribute is an int.
          ...(Number.isFinite(call.wait) && { [ATTR_LOCK_WAIT_LIMIT_MS]: call.wait }),
        },
      },
      parent,
    );
    const acquisition: Acquisition = {
      span,
      parent,
      // A span the tracer failed to start is no parent: what the call does stays under the caller
      // (and unrecorded without one, as instrumentation-ioredis's `requireParentSpan` asks).
      active: trace.isSpanContextValid(span.spanContext()) ? trace.setSpan(parent, span) : parent,
      pattern,
      metricAttributes: this.telemetry.metricAttributes(call.protocol, pattern),
      startedAt: performance.now(),
    };
    this.calls.set(call, acquisition);
    metrics.waiting.add(1, acquisition.metricAttributes);
    return acquisition;
  }

  /** Core granted the lock, inside the call. */
  granted(acquisition: Acquisition, event: AcquireEvent): void {
    acquisition.span.setAttributes({
      [ATTR_LOCK_ATTEMPTS]: event.attempts,
      [ATTR_LOCK_FENCE]: event.fence,
      [ATTR_LOCK_REENTRY]: event.holds > 1,
      [ATTR_LOCK_HANDOFF]: event.handoff,
    });
  }

  /**
   * The call returned or threw: its span ends and its wait is recorded. Each whatever the other
   * does: a span processor of the user's that throws must not leave the call counted as waiting.
   */
  finish(call: AcquireCall): void {
    const acquisition = this.calls.get(call);
    if (!acquisition) return;
    this.calls.delete(call);
    const { span, metricAttributes } = acquisition;
    const { metrics } = this.telemetry;
    const waited = performance.now() - acquisition.startedAt;
    const outcome: AcquireOutcome =
      'error' in call ? failureOutcome(call.error) : call.result ? 'acquired' : 'busy';
    try {
      span.setAttributes({ [ATTR_LOCK_OUTCOME]: outcome, [ATTR_LOCK_WAIT_MS]: waited });
      if (call.attempts !== undefined) span.setAttribute(ATTR_LOCK_ATTEMPTS, call.attempts);
      if (FAILED.has(outcome)) {
        span.setAttribute(ATTR_ERROR_TYPE, errorType(call.error));
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    } finally {
      metrics.waiting.add(-1, metricAttributes);
      metrics.waitDuration.record(waited / 1000, { ...metricAttributes, [ATTR_LOCK_OUTCOME]: outcome });
      if (outcome === 'timeout') metrics.timeouts.add(1, metricAttributes);
    }
  }

  /** Stops tracking the calls still in progress: their spans end without an outcome. */
  close(): void {
    abandon('an acquire span', this.calls.values(), this.telemetry.metrics.waiting);
    this.calls.clear();
  }
}
