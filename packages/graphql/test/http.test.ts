import { setTimeout as delay } from 'node:timers/promises';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { createLocker, type Locker } from '@lock/core';
import { type RedisServer, startRedis, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { lockedDirective } from '../src/index.js';
import { checkoutSchema, gate, overlapping } from './support/checkout.js';
import { post, postBatch, type ServerKind, startServer, type TestServer } from './support/servers.js';

const PAY = 'mutation ($id: ID!) { payOrder(id: $id) { id payments fence } }';
const PAY_NOW = 'mutation ($id: ID!) { payOrderNow(id: $id) { id payments fence } }';

let redis: RedisServer;
let client: Redis;
let run = 0;

beforeAll(async () => {
  redis = await startRedis();
  client = redis.client();
  return () => redis.stop();
});

describe.each<ServerKind>(['apollo', 'yoga'])('@locked over HTTP on %s', (kind) => {
  let locker: Locker;
  let server: TestServer | undefined;

  function newLocker(): Locker {
    run += 1;
    locker = createLocker({ redis: client, prefix: `http:${kind}:${run}:` });
    return locker;
  }

  afterEach(async () => {
    await server?.close();
    server = undefined;
    await locker.close();
  });

  it('runs 20 concurrent payOrder(id: 1) requests one at a time: one payment, no overlap', async () => {
    const { schema, ledger } = checkoutSchema({ locker: newLocker() }, () => delay(5));
    server = await startServer(kind, schema);
    const replies = await Promise.all(Array.from({ length: 20 }, () => post(server!.url, PAY, { id: '1' })));

    for (const reply of replies) expect(reply.errors).toEqual([]);
    expect(ledger.payments.get('1')).toBe(1);
    const intervals = ledger.intervals.get('1')!;
    expect(intervals).toHaveLength(20);
    expect(overlapping(intervals)).toBe(false);
    const fences = replies.map((reply) => (reply.data!.payOrder as { fence: number }).fence);
    expect(new Set(fences).size).toBe(20);
  });

  it('runs payOrder for different ids at the same time', async () => {
    const ids = ['1', '2', '3', '4'];
    const entered = new Set<string>();
    // Each resolver stays until all four are inside: serialising them would time out here.
    const { schema, ledger } = checkoutSchema({ locker: newLocker() }, async (id) => {
      entered.add(id);
      await waitFor('every order to be inside its resolver', async () => entered.size === ids.length, {
        timeout: 5_000,
        interval: 5,
      });
    });
    server = await startServer(kind, schema);
    const replies = await Promise.all(ids.map((id) => post(server!.url, PAY, { id })));

    for (const reply of replies) expect(reply.errors).toEqual([]);
    expect(overlapping(ids.map((id) => ledger.intervals.get(id)![0]!))).toBe(true);
  });

  it('answers the losers LOCKED with retryAfterMs (wait: 0) while the winner gets its data', async () => {
    const losersAnswered = gate();
    const { schema, ledger } = checkoutSchema({ locker: newLocker() }, () => losersAnswered.promise);
    server = await startServer(kind, schema);
    const losers: Awaited<ReturnType<typeof post>>[] = [];
    const replies = Array.from({ length: 20 }, () =>
      post(server!.url, PAY_NOW, { id: '1' }).then((reply) => {
        if (reply.errors.length > 0) losers.push(reply);
        if (losers.length === 19) losersAnswered.open();
        return reply;
      }),
    );
    const all = await Promise.all(replies);

    const winners = all.filter((reply) => reply.errors.length === 0);
    expect(winners).toHaveLength(1);
    expect(winners[0]!.data).toEqual({ payOrderNow: { id: '1', payments: 1, fence: expect.any(Number) } });
    expect(ledger.intervals.get('1')).toHaveLength(1);
    for (const loser of losers) {
      expect(loser.status).toBe(200);
      expect(loser.data).toEqual({ payOrderNow: null });
      expect(loser.errors).toHaveLength(1);
      expect(loser.errors[0]).toMatchObject({
        message: expect.stringMatching(/^Mutation\.payOrderNow is locked by another operation/),
        path: ['payOrderNow'],
        extensions: { code: 'LOCKED', retryAfterMs: expect.any(Number) },
      });
      expect(loser.errors[0]!.extensions!.retryAfterMs).toBeGreaterThan(0);
      expect(loser.headers.get('retry-after')).toBeNull();
    }
  });

  it('sets 409 and Retry-After with httpStatus on', async () => {
    const losersAnswered = gate();
    const { schema } = checkoutSchema(
      { locker: newLocker(), ttl: 5_000, httpStatus: true },
      () => losersAnswered.promise,
    );
    server = await startServer(kind, schema);
    const winner = post(server.url, PAY_NOW, { id: '7' });
    await waitFor('the winner to hold the lock', () => locker.isLocked('order:7'), {
      timeout: 5_000,
      interval: 5,
    });
    const loser = await post(server.url, PAY_NOW, { id: '7' });
    losersAnswered.open();

    expect(loser.status).toBe(409);
    const retryAfterMs = loser.errors[0]!.extensions!.retryAfterMs as number;
    expect(retryAfterMs).toBeGreaterThan(0);
    expect(retryAfterMs).toBeLessThanOrEqual(5_000);
    expect(loser.headers.get('retry-after')).toBe(String(Math.max(1, Math.ceil(retryAfterMs / 1000))));
    expect(loser.errors[0]!.extensions).not.toHaveProperty('http');
    expect((await winner).status).toBe(200);
  });

  it('with batching on, applies httpStatus to the whole batch on Apollo and not at all on Yoga', async () => {
    const { schema, ledger } = checkoutSchema({ locker: newLocker(), httpStatus: true }, async () => {});
    server = await startServer(kind, schema, { batching: true });
    const holder = await locker.acquire('order:5', { ttl: 20_000 });
    const reply = await postBatch(server.url, [
      { query: PAY_NOW, variables: { id: '5' } },
      { query: PAY_NOW, variables: { id: '6' } },
    ]);
    await holder.release();

    expect(reply.results.map((result) => result.data)).toEqual([
      { payOrderNow: null },
      { payOrderNow: { id: '6', payments: 1, fence: expect.any(Number) } },
    ]);
    expect(reply.results[0]!.errors![0]!.extensions).toEqual({
      code: 'LOCKED',
      retryAfterMs: expect.any(Number),
    });
    expect(ledger.payments.get('6')).toBe(1);
    // A client that takes Apollo's 409 for a failure of every operation would pay order 6 again.
    expect([reply.status, reply.headers.get('retry-after')]).toEqual(
      kind === 'apollo' ? [409, expect.stringMatching(/^\d+$/)] : [200, null],
    );
  });

  it('stops a waiting acquire when the client goes away', async () => {
    const base = newLocker();
    const attempts: Promise<unknown>[] = [];
    const watched = new Proxy(base, {
      get(target, property) {
        if (property === 'using')
          return (...args: Parameters<Locker['using']>) => {
            const attempt = target.using(...args);
            attempts.push(attempt.catch((error: unknown) => error));
            return attempt;
          };
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const { schema } = checkoutSchema({ locker: watched }, async () => {});
    server = await startServer(kind, schema);
    const holder = await base.acquire('order:9', { ttl: 20_000 });
    const client = new AbortController();
    const request = post(server.url, PAY, { id: '9' }, client.signal).catch((error: unknown) => error);
    await waitFor('the request to wait for the lock', async () => attempts.length === 1, { timeout: 5_000 });
    client.abort();

    // payOrder waits up to 10 s: without the abort this would be an AcquireTimeoutError then.
    expect(await attempts[0]).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' });
    expect(await request).toMatchObject({ name: 'AbortError' });
    await holder.release();
  });

  it('still resolves the other fields of the operation', async () => {
    const { schema } = checkoutSchema({ locker: newLocker() }, async () => {});
    server = await startServer(kind, schema);
    const holder = await locker.acquire('order:3', { ttl: 20_000 });
    const reply = await post(
      server.url,
      'mutation { busy: payOrderNow(id: "3") { id } free: payOrderNow(id: "4") { id payments } }',
    );
    await holder.release();

    expect(reply.data).toEqual({ busy: null, free: { id: '4', payments: 1 } });
    expect(reply.errors.map((error) => [error.path, error.extensions?.code])).toEqual([[['busy'], 'LOCKED']]);
  });
});

describe('@locked list fields resolved by an async generator, on yoga', () => {
  it('drains the generator under the lock: two operations never compute items at the same time', async () => {
    const locker = createLocker({ redis: client, prefix: 'http:async-list:' });
    let inside = 0;
    let most = 0;
    const started = gate();
    const finish = gate();
    async function* charges(until: Promise<void>, items: number[]) {
      started.open();
      inside += 1;
      most = Math.max(most, inside);
      await until;
      inside -= 1;
      yield* items;
    }
    const { lockedDirectiveTypeDefs, lockedDirectiveTransformer } = lockedDirective({ locker });
    const schema = lockedDirectiveTransformer(
      makeExecutableSchema({
        typeDefs: [
          lockedDirectiveTypeDefs,
          `type Query { x: Int }
           type Mutation {
             charges(id: ID!): [Int] @locked(key: "order:{args.id}")
             chargesNow(id: ID!): [Int] @locked(key: "order:{args.id}", wait: 0)
           }`,
        ],
        resolvers: {
          Mutation: {
            charges: () => charges(finish.promise, [1, 2]),
            chargesNow: () => charges(Promise.resolve(), [3]),
          },
        },
      }),
    );
    const server = await startServer('yoga', schema);
    try {
      const first = post(server.url, 'mutation { charges(id: 1) }');
      // A generator's body runs only when its items are drawn: by the directive under the lock,
      // or by Yoga once the lock is gone, when this second operation would get in.
      await started.promise;
      const second = await post(server.url, 'mutation { chargesNow(id: 1) }');
      finish.open();

      expect((await first).data).toEqual({ charges: [1, 2] });
      expect(second.errors.map((error) => [error.path, error.extensions?.code])).toEqual([
        [['chargesNow'], 'LOCKED'],
      ]);
      expect(most).toBe(1);
    } finally {
      await server.close();
      await locker.close();
    }
  });
});
