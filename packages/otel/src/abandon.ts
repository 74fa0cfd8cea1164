import type { Attributes, Span, UpDownCounter } from '@opentelemetry/api';
import { shielded } from './shielded.js';

/** Something recorded while it lasts: its open span, and the attributes it is counted under. */
interface Tracked {
  readonly span: Span;
  readonly metricAttributes: Attributes;
}

/**
 * Stops recording what is still in progress: each span ends without an outcome and is taken
 * off `count`. Every one, and both for each even when a span processor of the user's throws, so
 * that the up-down counter comes back to what is really in progress.
 */
export function abandon(what: string, tracked: Iterable<Tracked>, count: UpDownCounter): void {
  const one = shielded(`end ${what}`, ({ span, metricAttributes }: Tracked) => {
    try {
      span.end();
    } finally {
      count.add(-1, metricAttributes);
    }
  });
  for (const entry of tracked) one(entry);
}
