/**
 * Checkout over GraphQL Yoga: ten shoppers press "pay" on the same order at the same moment.
 * Without a lock the order is charged several times; under `@locked` one request pays and the
 * others are answered `LOCKED` at once (wait: 0) with the holder's remaining time.
 * Uses REDIS_URL when set, else an embedded redis-server on a free loopback port.
 */
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { createLocker } from '@lock/core';
import { lockedDirective, lockOf } from '@lock/graphql';
import { startRedis } from '@lock/testing';
import type { GraphQLResolveInfo } from 'graphql';
import { createYoga } from 'graphql-yoga';
import { connectRedis } from '../../shared/redis.js';

const shoppers = 10;
const redisServer = process.env.REDIS_URL ? undefined : await startRedis();
const url = process.env.REDIS_URL ?? redisServer!.url;
const redis = await connectRedis(url);
const locker = createLocker({ redis, prefix: `checkout-demo:${process.pid}:` });
console.log(redisServer ? `started redis-server at ${url}` : `using REDIS_URL=${url}`);

/** Charges per order: the payment provider's view. */
const charges = new Map<string, number>();

/** Reads whether the order is paid, talks to the payment provider, records the charge. */
async function pay(_: unknown, { id }: { id: string }) {
  const alreadyPaid = (charges.get(id) ?? 0) > 0;
  await delay(100);
  if (!alreadyPaid) charges.set(id, (charges.get(id) ?? 0) + 1);
  return { id, charges: charges.get(id) };
}

const { lockedDirectiveTypeDefs, lockedDirectiveTransformer } = lockedDirective({ locker });
const schema = lockedDirectiveTransformer(
  makeExecutableSchema({
    typeDefs: [
      lockedDirectiveTypeDefs,
      `type Payment { id: ID! charges: Int! fence: Float }
       type Query { charges(id: ID!): Int! }
       type Mutation {
         payOrderUnguarded(id: ID!): Payment
         payOrder(id: ID!): Payment @locked(key: "order:{args.id}", ttl: 5000, wait: 0)
       }`,
    ],
    resolvers: {
      Query: { charges: (_: unknown, { id }: { id: string }) => charges.get(id) ?? 0 },
      Mutation: {
        payOrderUnguarded: pay,
        payOrder: async (source: unknown, args: { id: string }, _: unknown, info: GraphQLResolveInfo) => ({
          ...(await pay(source, args)),
          fence: lockOf(info).fence,
        }),
      },
    },
  }),
);

const server = createServer(createYoga({ schema, logging: false }));
server.listen(0, '127.0.0.1');
await once(server, 'listening');
const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
console.log(`GraphQL Yoga listening at ${endpoint}`);

async function rush(field: string, id: string) {
  const query = `mutation { ${field}(id: "${id}") { charges fence } }`;
  return Promise.all(
    Array.from({ length: shoppers }, async () => {
      const response = await fetch(endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query }),
      });
      return (await response.json()) as {
        data: Record<string, { charges: number; fence: number | null } | null>;
        errors?: { message: string; extensions: { code: string; retryAfterMs?: number } }[];
      };
    }),
  );
}

try {
  await rush('payOrderUnguarded', 'A-100');
  console.log(`\nwithout a lock: ${shoppers} concurrent payOrderUnguarded(id: "A-100")`);
  console.log(`  order A-100 was charged ${charges.get('A-100')} times`);

  const replies = await rush('payOrder', 'B-200');
  const paid = replies.filter((reply) => reply.data.payOrder !== null);
  const errors = replies.flatMap((reply) => reply.errors ?? []);
  console.log(
    `\nwith @locked(key: "order:{args.id}", ttl: 5000, wait: 0): ${shoppers} concurrent payOrder(id: "B-200")`,
  );
  console.log(`  ${paid.length} paid (fence ${paid[0]?.data.payOrder?.fence}), ${errors.length} answered:`);
  const first = errors[0];
  if (first) console.log(`  ${JSON.stringify(first)}`);
  const charged = charges.get('B-200') ?? 0;
  console.log(`  order B-200 was charged ${charged} time(s)`);
  // The others must have been turned away because the order was locked; any other answer
  // (LOCK_UNAVAILABLE: Redis unreachable) says the demo could not show anything.
  const failure = errors.find((error) => error.extensions.code !== 'LOCKED');
  if (failure) throw new Error(`payOrder failed with ${failure.extensions.code}: ${failure.message}`);
  if (charged > 1) throw new Error(`double payment under @locked: charged ${charged} times`);
  if (charged === 0) throw new Error('order B-200 was not charged under @locked');
} finally {
  server.closeAllConnections();
  server.close();
  await locker.close();
  redis.disconnect();
  await redisServer?.stop();
}
