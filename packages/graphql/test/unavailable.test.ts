import { makeExecutableSchema } from '@graphql-tools/schema';
import { createLocker, lockEvents } from '@lock/core';
import { useRedis } from '@lock/testing/vitest';
import { graphql } from 'graphql';
import { describe, expect, it } from 'vitest';
import { lockedDirective } from '../src/index.js';
import { checkoutSchema } from './support/checkout.js';
import { post, type ServerKind, startServer } from './support/servers.js';

describe.each<ServerKind>(['apollo', 'yoga'])('Redis unreachable on %s', (kind) => {
  it.each([
    [false, 200, null],
    [true, 503, '1'],
  ])(
    'answers LOCK_UNAVAILABLE (httpStatus: %s → %i, Retry-After %s) and keeps serving operations that need no lock',
    async (httpStatus, status, retryAfter) => {
      const redis = await useRedis();
      const locker = createLocker({ redis: redis.client(), prefix: 'unavailable:' });
      let resolved = 0;
      const { schema } = checkoutSchema({ locker, httpStatus }, async () => {
        resolved += 1;
      });
      const server = await startServer(kind, schema);
      try {
        await redis.kill();
        const reply = await post(server.url, 'mutation { pay: payOrderNow(id: "1") { id } }');
        const query = await post(server.url, '{ ping }');

        expect(reply.status).toBe(status);
        // As the HTTP middlewares answer 503.
        expect(reply.headers.get('retry-after')).toBe(retryAfter);
        expect(reply.data).toEqual({ pay: null });
        expect(reply.errors).toHaveLength(1);
        expect(reply.errors[0]).toMatchObject({
          message: 'Mutation.payOrderNow could not be locked: the lock service is unavailable',
          path: ['pay'],
          extensions: { code: 'LOCK_UNAVAILABLE' },
        });
        expect(query.data).toEqual({ ping: 'pong' });
        expect(resolved).toBe(0);
      } finally {
        await server.close();
        await locker.close();
      }
    },
  );
});

describe('Redis lost while the resolver holds the lock', () => {
  it('keeps the resolver result when the release after it cannot reach Redis (the key ends by its lease)', async () => {
    const redis = await useRedis();
    const locker = createLocker({ redis: redis.client(), prefix: 'release:' });
    const releases: string[] = [];
    const onRelease = (message: unknown) => releases.push((message as { result: string }).result);
    lockEvents.release.subscribe(onRelease);
    const { lockedDirectiveTypeDefs, lockedDirectiveTransformer } = lockedDirective({ locker });
    const schema = lockedDirectiveTransformer(
      makeExecutableSchema({
        typeDefs: [
          lockedDirectiveTypeDefs,
          'type Query { x: Int } type Mutation { pay: String @locked(key: "order:1") }',
        ],
        resolvers: {
          Mutation: {
            pay: async () => {
              await redis.kill();
              return 'paid';
            },
          },
        },
      }),
    );
    try {
      expect(await graphql({ schema, source: 'mutation { pay }' })).toEqual({ data: { pay: 'paid' } });
      expect(releases).toEqual(['error']);
    } finally {
      lockEvents.release.unsubscribe(onRelease);
      await locker.close();
    }
  });
});
