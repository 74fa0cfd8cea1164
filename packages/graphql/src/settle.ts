/**
 * Waits until every item of a list result has settled, `depth` list levels deep, so that items
 * a resolver returns as promises are computed while the lock is still held. Items that were
 * promises are returned as (settled) promises, so graphql-js reports a rejected item at its own path.
 */
export async function settleList(value: unknown, depth: number): Promise<unknown> {
  if (depth === 0 || typeof value !== 'object' || value === null || !(Symbol.iterator in value)) return value;
  const items = Array.from(value as Iterable<unknown>, (item) =>
    depth > 1 || isThenable(item)
      ? Promise.resolve(item).then((inner) => settleList(inner, depth - 1))
      : item,
  );
  await Promise.allSettled(items);
  return items;
}

function isThenable(value: unknown): boolean {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
