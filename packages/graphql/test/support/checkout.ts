import { makeExecutableSchema } from '@graphql-tools/schema';
import type { GraphQLSchema } from 'graphql';
import { type LockedDirectiveOptions, lockedDirective, lockOf } from '../../src/index.js';

/** What happened inside the `payOrder` resolvers. */
export interface Ledger {
  /** Per order id: [entered, left] of every resolver run, from process.hrtime. */
  readonly intervals: Map<string, [bigint, bigint][]>;
  /** Per order id: how many payments were taken. */
  readonly payments: Map<string, number>;
}

/** Runs inside the resolver while it holds the order's lock. */
export type During = (id: string) => Promise<void>;

/**
 * A checkout schema: `payOrder` waits up to 10 s for a busy order, `payOrderNow` not at all.
 * Each pays an order unless it is paid already: read, pause, write, which double-pays when
 * two calls overlap.
 */
export function checkoutSchema(
  options: LockedDirectiveOptions,
  during: During,
): { schema: GraphQLSchema; ledger: Ledger } {
  const { lockedDirectiveTypeDefs, lockedDirectiveTransformer } = lockedDirective(options);
  const ledger: Ledger = { intervals: new Map(), payments: new Map() };
  const pay = async (
    _: unknown,
    { id }: { id: string },
    _context: unknown,
    info: Parameters<typeof lockOf>[0],
  ) => {
    const entered = process.hrtime.bigint();
    const paid = ledger.payments.get(id) ?? 0;
    await during(id);
    if (paid === 0) ledger.payments.set(id, (ledger.payments.get(id) ?? 0) + 1);
    const intervals = ledger.intervals.get(id) ?? [];
    intervals.push([entered, process.hrtime.bigint()]);
    ledger.intervals.set(id, intervals);
    return { id, payments: ledger.payments.get(id), fence: lockOf(info).fence };
  };
  const schema = makeExecutableSchema({
    typeDefs: [
      lockedDirectiveTypeDefs,
      `type Order { id: ID! payments: Int! fence: Float! }
       type Query { ping: String }
       type Mutation {
         payOrder(id: ID!): Order! @locked(key: "order:{args.id}", wait: 10000)
         payOrderNow(id: ID!): Order @locked(key: "order:{args.id}", wait: 0)
       }`,
    ],
    resolvers: { Query: { ping: () => 'pong' }, Mutation: { payOrder: pay, payOrderNow: pay } },
  });
  return { schema: lockedDirectiveTransformer(schema), ledger };
}

/** Whether any two of the intervals overlap. */
export function overlapping(intervals: readonly [bigint, bigint][]): boolean {
  const sorted = [...intervals].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return sorted.some((interval, i) => i > 0 && interval[0] < sorted[i - 1]![1]);
}

/** A promise the test opens by hand. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}
