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
  ATTR_LOCK_EXTENSION_COUNT,
  ATTR_LOCK_FENCE,
  ATTR_LOCK_HOLD_OUTCOME,
  ATTR_LOCK_KEY,
  ATTR_LOCK_LOST_REASON,
  ATTR_LOCK_PROTOCOL,
  ATTR_LOCK_REENTRY,
  ATTR_LOCK_RENEWAL_COUNT,
} from './attributes.js';
import {
  type AcquireEvent,
  type ExtendEvent,
  holdId,
  type LockEvent,
  type LostEvent,
  type ReleaseEvent,
} from './events.js';
import type { Telemetry } from './telemetry.js';

/** How a hold ended, as `lock.hold.outcome` records it. */
export type HoldOutcome = 'released' | 'not-owner' | 'lost';

/**
 * The `error.type` of a hold that did not end in its release, set with the ERROR status: the code
 * of core's error for the case. `release()` answers `'not-owner'` instead of throwing, but
 * `NotOwnerError` is core's error for an owner that no longer holds the lock.
 */
const HOLD_ERRORS: Readonly<Record<Exclude<HoldOutcome, 'released'>, string>> = {
  'not-owner': 'ERR_LOCK_NOT_OWNER',
  lost: 'ERR_LOCK_LOST',
};

/**
 * One lock this process holds, with every re-entrant handle of its owner. Handles are not
 * counted here: instrumentation may start (or be re-enabled) while a lock is already held, so
 * only core knows how many handles remain, and says with each release whether it was the last.
 */
interface Hold {
  readonly span: Span;
  readonly metricAttributes: Attributes;
  readonly startedAt: number;
  renewals: number;
  extensions: number;
}

/** The `lock.held` spans, the hold histogram and the held, loss and renewal counts. */
export class Holds {
  private readonly holds = new Map<string, Hold>();

  constructor(private readonly telemetry: Telemetry) {}

  /**
   * A lock was acquired: a new hold starts, or an owner re-enters the one it has. `acquire` is
   * the span of the call that took it, which the held span links to: a sibling under the caller's
   * span, the two are otherwise unrelated roots in a job that has none.
   */
  acquired(event: AcquireEvent, parent: Context, pattern: string, acquire: Span | undefined): void {
    const metricAttributes = this.telemetry.metricAttributes(event.protocol, pattern);
    this.telemetry.metrics.acquisitions.add(1, { ...metricAttributes, [ATTR_LOCK_REENTRY]: event.holds > 1 });
    const id = holdId(event);
    const known = this.holds.get(id);
    if (known) return;
    const span = this.telemetry.startSpan(
      `lock.held ${pattern}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          [ATTR_LOCK_KEY]: pattern,
          [ATTR_LOCK_PROTOCOL]: event.protocol,
          [ATTR_LOCK_FENCE]: event.fence,
        },
        links:
          acquire && trace.isSpanContextValid(acquire.spanContext())
            ? [{ context: acquire.spanContext() }]
            : undefined,
      },
      parent,
    );
    this.holds.set(id, {
      span,
      metricAttributes,
      startedAt: performance.now(),
      renewals: 0,
      extensions: 0,
    });
    this.telemetry.metrics.held.add(1, metricAttributes);
  }

  /**
   * A handle was released. The hold ends when core says its last handle is gone (`ended`), not
   * on Redis's answer alone: `held` comes both from a re-entry's inner release, which keeps the
   * hold, and from the last one of a hold whose explicit owner another locker or process shares,
   * which ends it, `released` as far as this hold goes. A release that failed ends nothing.
   */
  released(event: ReleaseEvent): void {
    // A core from before `ended` (the peer range admits one) gives Redis's answer alone.
    const ended = event.ended ?? (event.result === 'released' || event.result === 'not-owner');
    if (!ended) return;
    const id = holdId(event);
    const hold = this.holds.get(id);
    if (hold) this.end(id, hold, event.result === 'not-owner' ? 'not-owner' : 'released');
  }

  /**
   * A lease was reset. A renewal counts whether or not the hold is one this instrumentation saw
   * begin (it may have started before), as its acquisitions and losses do.
   */
  extended(event: ExtendEvent): void {
    const hold = this.holds.get(holdId(event));
    if (!event.renewal) {
      if (hold) hold.extensions += 1;
      return;
    }
    if (hold) hold.renewals += 1;
    this.telemetry.metrics.renewals.add(1, hold?.metricAttributes ?? this.metricAttributesOf(event));
  }

  lost(event: LostEvent): void {
    const id = holdId(event);
    const hold = this.holds.get(id);
    this.telemetry.metrics.losses.add(1, {
      ...(hold?.metricAttributes ?? this.metricAttributesOf(event)),
      [ATTR_LOCK_LOST_REASON]: event.reason,
    });
    if (!hold) return;
    hold.span.setAttribute(ATTR_LOCK_LOST_REASON, event.reason);
    this.end(id, hold, 'lost');
  }

  /** Stops tracking the holds still open: their spans end without an outcome. */
  close(): void {
    abandon('a held span', this.holds.values(), this.telemetry.metrics.held);
    this.holds.clear();
  }

  /** The metric attributes of a hold this instrumentation did not see begin. */
  private metricAttributesOf(event: LockEvent): Attributes {
    return this.telemetry.metricAttributes(event.protocol, this.telemetry.pattern(event.key));
  }

  /** Ends a hold: its span, and its count and duration, each whatever the other does. */
  private end(id: string, hold: Hold, outcome: HoldOutcome): void {
    this.holds.delete(id);
    const { span, metricAttributes } = hold;
    try {
      span.setAttributes({
        [ATTR_LOCK_HOLD_OUTCOME]: outcome,
        [ATTR_LOCK_RENEWAL_COUNT]: hold.renewals,
        [ATTR_LOCK_EXTENSION_COUNT]: hold.extensions,
      });
      if (outcome !== 'released') {
        span.setAttribute(ATTR_ERROR_TYPE, HOLD_ERRORS[outcome]);
        span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    } finally {
      const { metrics } = this.telemetry;
      metrics.held.add(-1, metricAttributes);
      metrics.holdDuration.record((performance.now() - hold.startedAt) / 1000, {
        ...metricAttributes,
        [ATTR_LOCK_HOLD_OUTCOME]: outcome,
      });
    }
  }
}
