import { setTimeout as delay } from 'node:timers/promises';
import { addResolversToSchema, makeExecutableSchema, mergeSchemas } from '@graphql-tools/schema';
import { MapperKind, mapSchema } from '@graphql-tools/utils';
import {
  createLocker,
  InvalidKeyError,
  InvalidOptionError,
  type Lock,
  type Locker,
  runInChain,
} from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import {
  defaultFieldResolver,
  type ExecutionResult,
  GraphQLID,
  GraphQLInt,
  GraphQLNonNull,
  GraphQLObjectType,
  type GraphQLResolveInfo,
  GraphQLScalarType,
  GraphQLSchema,
  graphql,
} from 'graphql';
import type { Redis } from 'ioredis';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LockedDirectiveError, type LockedDirectiveOptions, lockedDirective, lockOf } from '../src/index.js';
import { gate, overlapping } from './support/checkout.js';

let redis: RedisServer;
let client: Redis;
let locker: Locker;
let prefix: string;
let lockers = 0;

beforeAll(async () => {
  redis = await startRedis();
  client = redis.client();
  return () => redis.stop();
});

afterEach(() => locker.close());

function newLocker(): Locker {
  lockers += 1;
  prefix = `execute:${lockers}:`;
  locker = createLocker({ redis: client, prefix });
  return locker;
}

type Resolvers = Parameters<typeof makeExecutableSchema>[0]['resolvers'];

function build(
  sdl: string,
  resolvers: Resolvers,
  options: Partial<LockedDirectiveOptions> = {},
): GraphQLSchema {
  const { lockedDirectiveTypeDefs, lockedDirectiveTransformer } = lockedDirective({
    locker: newLocker(),
    ...options,
  });
  return lockedDirectiveTransformer(
    makeExecutableSchema({ typeDefs: [lockedDirectiveTypeDefs, sdl], resolvers }),
  );
}

async function run(
  schema: GraphQLSchema,
  source: string,
  contextValue: unknown = {},
): Promise<ExecutionResult> {
  return graphql({ schema, source, contextValue });
}

const codes = (result: ExecutionResult) => result.errors?.map((error) => [error.path, error.extensions.code]);

describe('keys', () => {
  it('answers BAD_USER_INPUT for a missing nullable argument, runs nothing and writes nothing to Redis', async () => {
    let calls = 0;
    const schema = build('type Query { order(id: ID): Int @locked(key: "order:{args.id}") }', {
      Query: { order: () => ++calls },
    });
    const result = await run(schema, '{ order }');

    expect(result.data).toEqual({ order: null });
    expect(codes(result)).toEqual([[['order'], 'BAD_USER_INPUT']]);
    expect(result.errors![0]!.message).toBe(
      'Query.order needs {args.id} for its lock key, and it is undefined',
    );
    expect(calls).toBe(0);
    expect(await client.keys(`${prefix}*`)).toEqual([]);
  });

  it('answers BAD_USER_INPUT for a missing argument or input field named after a member of Object.prototype', async () => {
    let calls = 0;
    const anything = new GraphQLScalarType({ name: 'Anything', serialize: String });
    const schema = build(
      `scalar Anything
       input Team { constructor: ID }
       type Query {
         a(constructor: ID): Int @locked(key: "a:{args.constructor}")
         b(toString: Anything): Int @locked(key: "b:{args.toString}")
         c(team: Team!): Int @locked(key: "c:{args.team.constructor}")
       }`,
      { Anything: anything, Query: { a: () => ++calls, b: () => ++calls, c: () => ++calls } },
    );
    const result = await run(schema, '{ a b c(team: {}) }');

    expect(codes(result)).toEqual([
      [['a'], 'BAD_USER_INPUT'],
      [['b'], 'BAD_USER_INPUT'],
      [['c'], 'BAD_USER_INPUT'],
    ]);
    expect(result.errors![2]!.message).toBe(
      'Query.c needs {args.team.constructor} for its lock key, and it is undefined',
    );
    expect(calls).toBe(0);
    expect(await client.keys(`${prefix}*`)).toEqual([]);
  });

  it('answers BAD_USER_INPUT for a value holding a lone surrogate, which would be written as the bytes of U+FFFD', async () => {
    let calls = 0;
    const schema = build('type Query { s(id: String!): Int @locked(key: "s:{args.id}") }', {
      Query: { s: () => ++calls },
    });
    // The document itself may not hold one (a syntax error): variables, parsed from JSON, may.
    const result = await graphql({
      schema,
      source:
        'query ($a: String!, $b: String!, $c: String!) { high: s(id: $a) low: s(id: $b) pair: s(id: $c) }',
      variableValues: JSON.parse('{ "a": "\\ud800", "b": "x\\udfff", "c": "\\ud83d\\udd12" }'),
      contextValue: {},
    });

    expect(codes(result)).toEqual([
      [['high'], 'BAD_USER_INPUT'],
      [['low'], 'BAD_USER_INPUT'],
    ]);
    expect(result.errors![0]!.message).toBe(
      'Query.s needs {args.id} for its lock key to be well-formed Unicode, and it holds a lone UTF-16 surrogate',
    );
    expect(result.data).toEqual({ high: null, low: null, pair: 1 });
    expect(calls).toBe(1);
  });

  it('answers BAD_USER_INPUT for a missing context value or a key function answering null', async () => {
    const schema = build(
      'type Query { a: Int @locked(key: "t:{context.tenant.id}") b: Int @locked(key: "c:{keys.cart}") }',
      { Query: { a: () => 1, b: () => 2 } },
      { keys: { cart: () => null } },
    );
    const result = await run(schema, '{ a b }', { tenant: null });

    expect(codes(result)).toEqual([
      [['a'], 'BAD_USER_INPUT'],
      [['b'], 'BAD_USER_INPUT'],
    ]);
    expect(await client.keys(`${prefix}*`)).toEqual([]);
  });

  it('answers BAD_USER_INPUT for an empty string from an argument, the context or a key function, runs nothing and writes nothing to Redis', async () => {
    let calls = 0;
    const schema = build(
      `type Query {
         a(id: ID!): Int @locked(key: "order:{args.id}")
         b: Int @locked(key: "t:{context.tenant}")
         c: Int @locked(key: "c:{keys.cart}")
       }`,
      { Query: { a: () => ++calls, b: () => ++calls, c: () => ++calls } },
      { keys: { cart: () => '' } },
    );
    const result = await run(schema, '{ a(id: "") b c }', { tenant: '' });

    expect(codes(result)).toEqual([
      [['a'], 'BAD_USER_INPUT'],
      [['b'], 'BAD_USER_INPUT'],
      [['c'], 'BAD_USER_INPUT'],
    ]);
    expect(result.errors![0]!.message).toBe(
      'Query.a needs {args.id} for its lock key, and it is an empty string',
    );
    expect(calls).toBe(0);
    expect(await client.keys(`${prefix}*`)).toEqual([]);
  });

  it('refuses a number that is not finite: from the input as BAD_USER_INPUT, from the server as a server error', async () => {
    let calls = 0;
    // A scalar whose parse lets NaN through, as `Number("abc")` does.
    const amount = new GraphQLScalarType({ name: 'Amount', parseValue: Number, serialize: Number });
    const schema = build(
      `scalar Amount
       type Query {
         a(n: Amount!): Int @locked(key: "a:{args.n}")
         b: Int @locked(key: "b:{context.shard}")
         c: Int @locked(key: "c:{keys.cart}")
       }`,
      { Amount: amount, Query: { a: () => ++calls, b: () => ++calls, c: () => ++calls } },
      { keys: { cart: () => Number.NaN } },
    );
    const result = await graphql({
      schema,
      source: 'query ($n: Amount!) { a(n: $n) b c }',
      variableValues: { n: 'abc' },
      contextValue: { shard: Number.POSITIVE_INFINITY },
    });

    expect(result.errors?.map((error) => [error.path, error.extensions.code, error.message])).toEqual([
      [
        ['a'],
        'BAD_USER_INPUT',
        'Query.a needs {args.n} for its lock key to be a finite number, and it is NaN',
      ],
      [['b'], undefined, 'Query.b: {context.shard} gave Infinity; a number in a key must be finite'],
      [['c'], undefined, 'Query.c: {keys.cart} gave NaN; a number in a key must be finite'],
    ]);
    expect(calls).toBe(0);
    expect(await client.keys(`${prefix}*`)).toEqual([]);
  });

  it('refuses a key segment that gives a promise as a server error, runs nothing, and leaves no rejection unhandled', async () => {
    let calls = 0;
    const schema = build(
      'type Query { a: Int @locked(key: "c:{keys.cart}") b: Int @locked(key: "t:{context.tenant}") }',
      { Query: { a: () => ++calls, b: () => ++calls } },
      // JavaScript callers can pass an async key function where the types say it must not be.
      { keys: { cart: (async () => Promise.reject(new Error('cart lookup failed'))) as never } },
    );
    const result = await run(schema, '{ a b }', { tenant: Promise.reject(new Error('no tenant')) });
    // Any rejection left unhandled would surface after this turn; vitest fails the run on it.
    await new Promise((resolve) => setTimeout(resolve, 10));

    expect(result.errors?.map((error) => [error.path, error.extensions.code, error.message])).toEqual([
      [['a'], undefined, expect.stringMatching(/^Query\.a: \{keys\.cart\} gave a promise/)],
      [['b'], undefined, expect.stringMatching(/^Query\.b: \{context\.tenant\} gave a promise/)],
    ]);
    expect(calls).toBe(0);
    expect(await client.keys(`${prefix}*`)).toEqual([]);
  });

  it('refuses a context value or key function result that is an object or a function as a server error, naming the segment', async () => {
    let calls = 0;
    const schema = build(
      `type Query {
         a: Int @locked(key: "t:{context.tenant}")
         b: Int @locked(key: "t:{context.user.id}")
         c: Int @locked(key: "c:{keys.cart}")
       }`,
      { Query: { a: () => ++calls, b: () => ++calls, c: () => ++calls } },
      { keys: { cart: (() => ({ id: 1 })) as never } },
    );
    const result = await run(schema, '{ a b c }', { tenant: { id: 't1' }, user: { id: () => 'u1' } });

    expect(result.errors?.map((error) => [error.path, error.extensions.code, error.message])).toEqual([
      [
        ['a'],
        undefined,
        'Query.a: {context.tenant} gave an object; a key segment must be a string, number, bigint or boolean',
      ],
      [
        ['b'],
        undefined,
        'Query.b: {context.user.id} gave a function; a key segment must be a string, number, bigint or boolean',
      ],
      [
        ['c'],
        undefined,
        'Query.c: {keys.cart} gave an object; a key segment must be a string, number, bigint or boolean',
      ],
    ]);
    expect(calls).toBe(0);
    expect(await client.keys(`${prefix}*`)).toEqual([]);
  });

  it('passes errors of the server’s setup through as they are, not as LOCK_UNAVAILABLE', async () => {
    const schema = build(
      'type Query { a: Int @locked(key: "a") b: Int @locked(key: "b:{keys.broken}") }',
      { Query: { a: () => 1, b: () => 2 } },
      {
        signal: () => ({ aborted: false }) as unknown as AbortSignal,
        keys: {
          broken: () => {
            throw new Error('key function failed');
          },
        },
      },
    );
    const result = await run(schema, '{ a b }');

    expect(result.data).toEqual({ a: null, b: null });
    const byField = new Map(result.errors!.map((error) => [error.path![0], error]));
    expect([byField.get('a')?.extensions.code, byField.get('b')?.extensions.code]).toEqual([
      undefined,
      undefined,
    ]);
    expect(byField.get('a')?.originalError).toMatchObject({ code: 'ERR_LOCK_INVALID_OPTION' });
    expect(byField.get('b')?.message).toBe('key function failed');
  });

  it('builds the key from input objects, the context and key functions', async () => {
    const schema = build(
      `input PayInput { order: OrderRef! } input OrderRef { id: ID! }
       type Query { x: Int }
       type Mutation {
         pay(input: PayInput!): String @locked(key: "{{{context.tenant}}}:order:{args.input.order.id}:{keys.day}")
       }`,
      { Mutation: { pay: (_: unknown, __: unknown, ___: unknown, info: never) => lockOf(info).key } },
      { keys: { day: (args) => `${(args.input as { order: { id: string } }).order.id.length}d` } },
    );
    const result = await run(schema, 'mutation { pay(input: { order: { id: "42" } }) }', { tenant: 'acme' });

    expect(result).toEqual({ data: { pay: '{acme}:order:42:2d' } });
  });

  it('takes every scalar a key function may answer: string, number, bigint and boolean', async () => {
    const schema = build(
      'type Query { key: String @locked(key: "k:{keys.s}:{keys.n}:{keys.big}:{keys.flag}") }',
      { Query: { key: (_: unknown, __: unknown, ___: unknown, info: never) => lockOf(info).key } },
      { keys: { s: () => 'a', n: () => 1.5, big: () => 2n ** 64n, flag: () => false } },
    );
    const result = await run(schema, '{ key }');

    expect(result).toEqual({ data: { key: 'k:a:1.5:18446744073709551616:false' } });
  });
  it('escapes the values it substitutes, so different argument pairs never share a key', async () => {
    const inside = gate();
    const finish = gate();
    const schema = build(
      `type Query {
         reserve(user: String!, sku: String!): String @locked(key: "cart:{args.user}:{args.sku}", wait: 0)
       }`,
      {
        Query: {
          reserve: async (_: unknown, { user }: { user: string }, __: unknown, info: never) => {
            if (user === 'alice:b') {
              inside.open();
              await finish.promise;
            }
            return lockOf(info).key;
          },
        },
      },
    );
    const first = run(schema, '{ reserve(user: "alice:b", sku: "c") }');
    await inside.promise;
    const second = await run(schema, '{ reserve(user: "alice", sku: "b:c") }');
    finish.open();

    expect(second).toEqual({ data: { reserve: 'cart:alice:b\\:c' } });
    expect(await first).toEqual({ data: { reserve: 'cart:alice\\:b:c' } });
    const other = await run(schema, '{ reserve(user: "a\\\\{x}", sku: "1") }');
    expect(other).toEqual({ data: { reserve: 'cart:a\\\\\\{x\\}:1' } });
  });

  it('escapes the separators of any template, so different argument pairs never share a key', async () => {
    const inside = gate();
    const finish = gate();
    const schema = build(
      `type Query {
         reserve(user: String!, sku: String!): String @locked(key: "cart/{args.user}/{args.sku}", wait: 0)
         pair(x: String!, y: String!): String @locked(key: "a-{args.x}-{args.y}.{args.x}")
       }`,
      {
        Query: {
          reserve: async (_: unknown, { user }: { user: string }, __: unknown, info: never) => {
            if (user === 'alice/b') {
              inside.open();
              await finish.promise;
            }
            return lockOf(info).key;
          },
          pair: (_: unknown, __: unknown, ___: unknown, info: never) => lockOf(info).key,
        },
      },
    );
    const first = run(schema, '{ reserve(user: "alice/b", sku: "c") }');
    await inside.promise;
    const second = await run(schema, '{ reserve(user: "alice", sku: "b/c") }');
    finish.open();

    expect(second).toEqual({ data: { reserve: String.raw`cart/alice/b\/c` } });
    expect(await first).toEqual({ data: { reserve: String.raw`cart/alice\/b/c` } });
    const pairs = await run(schema, '{ p: pair(x: "p-q", y: "r") q: pair(x: "p", y: "q-r") }');
    expect(pairs).toEqual({ data: { p: String.raw`a-p\-q-r.p\-q`, q: String.raw`a-p-q\-r.p` } });
  });

  it('keeps the keys of ":"-separated templates as they were: only \\ : { } are escaped there', async () => {
    const schema = build(
      'type Query { reserve(user: String!, sku: String!): String @locked(key: "shop/eu-1.cart:{args.user}:{args.sku}") }',
      { Query: { reserve: (_: unknown, __: unknown, ___: unknown, info: never) => lockOf(info).key } },
    );
    const result = await run(schema, String.raw`{ reserve(user: "a/b-c.d", sku: "x{y}\\z:") }`);

    expect(result).toEqual({ data: { reserve: String.raw`shop/eu-1.cart:a/b-c.d:x\{y\}\\z\:` } });
  });

  it('answers BAD_USER_INPUT for a key core refuses without echoing the key, which holds what the client never sent', async () => {
    // An empty key no longer reaches core: its empty segment is refused first (see above).
    const schema = build('type Query { long(x: String!): Int @locked(key: "{context.apiKey}:{args.x}") }', {
      Query: { long: () => 1 },
    });
    const result = await run(schema, `{ long(x: "${'y'.repeat(5000)}") }`, {
      apiKey: 'sk_live_server_secret',
    });

    expect(result.data).toEqual({ long: null });
    expect(result.errors?.map((error) => error.message)).toEqual([
      'Query.long: the lock key built from the input is refused (longer than 4096 bytes)',
    ]);
    expect(codes(result)).toEqual([[['long'], 'BAD_USER_INPUT']]);
    expect(result.errors![0]!.originalError?.cause).toBeInstanceOf(InvalidKeyError);
    expect(JSON.stringify(result)).not.toContain('sk_live');
  });

  it('keys a custom scalar parsed to an object, and an enum with object values, by their serialized form', async () => {
    const schema = build(
      `scalar Day
       enum Plan { BASIC PRO }
       type Query { slot(day: Day!, plan: Plan!): String @locked(key: "slot:{args.day}:{args.plan}") }`,
      {
        Day: new GraphQLScalarType({
          name: 'Day',
          parseLiteral: (ast) => new Date(`${(ast as { value: string }).value}T00:00:00Z`),
          parseValue: (value) => new Date(`${value as string}T00:00:00Z`),
          serialize: (value) => (value as Date).toISOString().slice(0, 10),
        }),
        Plan: { BASIC: { tier: 1 }, PRO: { tier: 2 } },
        Query: { slot: (_: unknown, __: unknown, ___: unknown, info: never) => lockOf(info).key },
      },
    );
    expect(await run(schema, '{ slot(day: "2026-11-26", plan: PRO) }')).toEqual({
      data: { slot: 'slot:2026-11-26:PRO' },
    });
  });
});

describe('the lock around the resolver', () => {
  it('gives the resolver its handle: fences increase, the signal is live', async () => {
    const schema = build('type Query { x: Int } type Mutation { pay: Int @locked(key: "order:1") }', {
      Mutation: {
        pay: (_: unknown, __: unknown, ___: unknown, info: never) => {
          expect(lockOf(info).signal.aborted).toBe(false);
          lockOf(info).assertHeld();
          return lockOf(info).fence;
        },
      },
    });
    const first = await run(schema, 'mutation { pay }');
    const second = await run(schema, 'mutation { pay }');

    expect((second.data!.pay as number) > (first.data!.pay as number)).toBe(true);
  });

  it('refuses with InvalidOptionError a lockOf given no info object', () => {
    for (const info of [undefined, null, 'info', {}]) {
      expect(() => lockOf(info as never)).toThrow(InvalidOptionError);
    }
  });

  it('throws LockedDirectiveError from lockOf on a field without the directive', async () => {
    const schema = build('type Query { plain: Int }', {
      Query: { plain: (_: unknown, __: unknown, ___: unknown, info: never) => lockOf(info).fence },
    });
    const result = await run(schema, '{ plain }');

    expect(result.errors![0]!.originalError).toBeInstanceOf(LockedDirectiveError);
    expect(result.errors![0]!.message).toMatch(/^Query\.plain: lockOf\(info\) found no lock/);
  });

  it('resolves a field without a resolver of its own by the fieldResolver option, under the lock', async () => {
    const sdl = 'type Query { x: Int } type Mutation { pay: Int @locked(key: "order:1") total: Int }';
    const fieldResolver = (_: unknown, __: unknown, ___: unknown, info: GraphQLResolveInfo) =>
      info.fieldName === 'pay' ? lockOf(info).fence : -1;
    const schema = build(sdl, { Mutation: { total: () => 7 } }, { fieldResolver });
    const result = await run(schema, 'mutation { pay total }');

    expect(result.errors).toBeUndefined();
    expect(result.data).toEqual({ pay: expect.any(Number), total: 7 });
    expect(result.data!.pay).toBeGreaterThan(0);
    expect(await locker.isLocked('order:1')).toBe(false);
  });

  it('finds the lock from a copy of info that a transform applied before the directive handed the resolver', async () => {
    const { lockedDirectiveTypeDefs, lockedDirectiveTransformer } = lockedDirective({ locker: newLocker() });
    const schema = makeExecutableSchema({
      typeDefs: [
        lockedDirectiveTypeDefs,
        'type Query { x: Int } type Mutation { pay: Float @locked(key: "order:1") }',
      ],
      resolvers: {
        Mutation: {
          pay: (_: unknown, __: unknown, ___: unknown, info: GraphQLResolveInfo) => lockOf(info).fence,
        },
      },
    });
    // A tracing transform between the directive and the resolver, adding its span to a copy of info.
    const traced = mapSchema(schema, {
      [MapperKind.OBJECT_FIELD]: (config) => {
        const resolve = config.resolve ?? defaultFieldResolver;
        return {
          ...config,
          resolve: (source, args, context, info) =>
            resolve(source, args, context, { ...info, span: 1 } as GraphQLResolveInfo),
        };
      },
    });
    const result = await run(lockedDirectiveTransformer(traced), 'mutation { pay }');

    expect(result.errors).toBeUndefined();
    expect(result.data!.pay).toBeGreaterThan(0);
  });

  it('runs the resolver to its end under the lock when a failed non-null sibling answers the operation first, and releases after it', async () => {
    const started = gate();
    const finish = gate();
    const events: string[] = [];
    const schema = build(
      `type Query {
         broken: String!
         order(id: ID!): Int @locked(key: "order:{args.id}")
       }`,
      {
        Query: {
          broken: async () => {
            await started.promise;
            throw new Error('boom');
          },
          order: async () => {
            started.open();
            await finish.promise;
            events.push(`resolver ends, held: ${await locker.isLocked('order:1')}`);
            return 1;
          },
        },
      },
    );
    const result = await run(schema, '{ broken order(id: 1) }');
    events.push('response');
    finish.open();
    // Granted once the field's lock is released: waits for the release, not for a guessed time.
    const next = await locker.acquire('order:1', { wait: 5_000 });
    await next.release();

    expect(result.data).toBeNull();
    expect(result.errors!.map((error) => error.message)).toEqual(['boom']);
    expect(events).toEqual(['response', 'resolver ends, held: true']);
  });

  it('releases when the resolver throws', async () => {
    const schema = build('type Query { x: Int } type Mutation { pay: Int @locked(key: "order:1") }', {
      Mutation: {
        pay: async () => {
          await delay(1);
          throw new Error('card declined');
        },
      },
    });
    const result = await run(schema, 'mutation { pay }');

    expect(result.errors![0]!.message).toBe('card declined');
    expect(await locker.isLocked('order:1')).toBe(false);
  });

  it('lets code inside the resolver re-enter the field lock', async () => {
    const schema = build(
      'type Query { x: Int } type Mutation { pay: Int @locked(key: "order:1", wait: 0) }',
      {
        Mutation: { pay: () => locker.using('order:1', { wait: 0 }, (inner) => inner.holds) },
      },
    );

    expect(await run(schema, 'mutation { pay }')).toEqual({ data: { pay: 2 } });
    expect(await locker.isLocked('order:1')).toBe(false);
  });

  it('hands onLocked the LOCKED error and uses what it returns', async () => {
    const seen: unknown[] = [];
    const schema = build(
      'type Query { order(id: ID!): Int @locked(key: "order:{args.id}", wait: 0) }',
      { Query: { order: () => 1 } },
      {
        onLocked: (error, call) => {
          seen.push([error.extensions.code, call.key, call.args]);
          return -1;
        },
      },
    );
    const holder = await locker.acquire('order:5');
    const result = await run(schema, '{ order(id: 5) }');
    await holder.release();

    expect(result).toEqual({ data: { order: -1 } });
    expect(seen).toEqual([['LOCKED', 'order:5', { id: '5' }]]);
  });

  it('holds the lock of a list field until every item has settled', async () => {
    const heldWhileComputing: boolean[] = [];
    const item = async (n: number) => {
      await delay(5);
      heldWhileComputing.push(await locker.isLocked('batch'));
      if (n === 2) throw new Error('item 2 failed');
      return n;
    };
    const schema = build('type Query { batch: [Int] @locked(key: "batch") }', {
      Query: { batch: () => [item(1), item(2), item(3)] },
    });
    const result = await run(schema, '{ batch }');

    expect(result.data).toEqual({ batch: [1, null, 3] });
    expect(result.errors?.map((error) => [error.path, error.message])).toEqual([
      [['batch', 1], 'item 2 failed'],
    ]);
    expect(heldWhileComputing).toEqual([true, true, true]);
    expect(await locker.isLocked('batch')).toBe(false);
  });

  it('handles a rejected item of an async iterable as soon as it is drawn: no unhandled rejection while the rest is drawn', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    // Not an async generator (which awaits what it yields): an iterator handing out promises as
    // they are, as a stream of pending work does.
    const items = [() => Promise.reject(new Error('item 0 failed')), () => Promise.resolve(1)];
    const stream = (): AsyncIterable<unknown> => ({
      [Symbol.asyncIterator]: () => ({
        next: async () => {
          const item = items.shift();
          if (item === undefined) return { done: true, value: undefined };
          await delay(20);
          return { done: false, value: item() };
        },
      }),
    });
    const schema = build('type Query { batch: [Int] @locked(key: "batch") }', {
      Query: { batch: stream },
    });
    try {
      const result = await run(schema, '{ batch }');

      expect(result.data).toEqual({ batch: [null, 1] });
      expect(result.errors?.map((error) => [error.path, error.message])).toEqual([
        [['batch', 0], 'item 0 failed'],
      ]);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it.each([
    [
      'a generator',
      (first: Promise<number>): Iterable<unknown> =>
        (function* () {
          yield first;
          throw new Error('stream broke');
        })(),
    ],
    [
      'an async iterable',
      (first: Promise<number>): AsyncIterable<unknown> => {
        let drawn = 0;
        return {
          [Symbol.asyncIterator]: () => ({
            next: async () => {
              drawn += 1;
              if (drawn > 1) throw new Error('stream broke');
              return { done: false, value: first };
            },
          }),
        };
      },
    ],
  ])(
    'holds the lock until the items %s handed out have settled, also when it then throws',
    async (_, stream) => {
      const heldWhenDone: boolean[] = [];
      const slow = async () => {
        await delay(30);
        heldWhenDone.push(await locker.isLocked('batch'));
        return 1;
      };
      const schema = build('type Query { batch: [Int] @locked(key: "batch") }', {
        Query: { batch: () => stream(slow()) },
      });
      const result = await run(schema, '{ batch }');

      expect(result.errors?.map((error) => [error.path, error.message])).toEqual([
        [['batch'], 'stream broke'],
      ]);
      expect(heldWhenDone).toEqual([true]);
    },
  );

  it('holds the lock of an object result until its promise fields have settled: two payments never overlap', async () => {
    let inside = 0;
    let most = 0;
    const charge = async (until: Promise<void>) => {
      inside += 1;
      most = Math.max(most, inside);
      await until;
      inside -= 1;
      return true;
    };
    const awaited = gate();
    const finish = gate();
    const schema = build(
      `type Order { id: ID! paid: Boolean! }
       type Query { x: Int }
       type Mutation {
         pay(id: ID!): Order @locked(key: "order:{args.id}")
         payNow(id: ID!): Order @locked(key: "order:{args.id}", wait: 0)
       }`,
      {
        Mutation: {
          pay: (_: unknown, { id }: { id: string }) => ({
            id,
            paid: watched(charge(finish.promise), awaited.open),
          }),
          payNow: (_: unknown, { id }: { id: string }) => ({ id, paid: charge(Promise.resolve()) }),
        },
      },
    );
    const first = run(schema, 'mutation { pay(id: 1) { id paid } }');
    // Whoever waits for the charge (the directive, or graphql-js once the lock is gone), the
    // charge is still running: a second payment now must not get in.
    await awaited.promise;
    const second = await run(schema, 'mutation { payNow(id: 1) { id paid } }');
    finish.open();

    expect(await first).toEqual({ data: { pay: { id: '1', paid: true } } });
    expect(codes(second)).toEqual([[['payNow'], 'LOCKED']]);
    expect(most).toBe(1);
    expect(await locker.isLocked('order:1')).toBe(false);
  });

  it('settles promise fields of a (frozen) class instance and keeps its private fields readable', async () => {
    class Order {
      readonly #paid = true;
      readonly id = '7';
      readonly total = Promise.resolve(10);
      get paid(): boolean {
        return this.#paid;
      }
      label(): string {
        return this.#paid ? 'paid' : 'open';
      }
    }
    let settledInside = false;
    const schema = build(
      `type Order { id: ID! paid: Boolean! label: String! total: Int! }
       type Query { x: Int }
       type Mutation { pay: Order @locked(key: "order:7") }`,
      {
        Mutation: {
          pay: () => {
            const order = new Order();
            void order.total.then(async () => {
              settledInside = await locker.isLocked('order:7');
            });
            return Object.freeze(order);
          },
        },
      },
    );
    const result = await run(schema, 'mutation { pay { id paid label total } }');

    expect(result).toEqual({ data: { pay: { id: '7', paid: true, label: 'paid', total: 10 } } });
    expect(settledInside).toBe(true);
  });

  it('answers a function-valued own field of a frozen class instance whose promise fields it settled', async () => {
    class Order {
      readonly id = '7';
      readonly total = Promise.resolve(10);
      readonly label = () => 'paid';
    }
    const schema = build(
      `type Order { id: ID! total: Int! label: String! }
       type Query { x: Int }
       type Mutation { pay: Order @locked(key: "order:7") }`,
      { Mutation: { pay: () => Object.freeze(new Order()) } },
    );
    const result = await run(schema, 'mutation { pay { id total label } }');

    expect(result).toEqual({ data: { pay: { id: '7', total: 10, label: 'paid' } } });
  });

  it('shows child resolvers the own properties of a class instance whose promise fields it settled', async () => {
    class Order {
      readonly id = '7';
      readonly total = Promise.resolve(10);
    }
    const schema = build(
      `type Order {
         id: ID! total: Int! keys: String! json: String! spread: Int! hasOwn: Boolean! isOrder: Boolean!
       }
       type Query { x: Int }
       type Mutation { pay: Order @locked(key: "order:7") }`,
      {
        Mutation: { pay: () => Object.freeze(new Order()) },
        Order: {
          keys: (order: Order) => Object.keys(order).join(','),
          json: (order: Order) => JSON.stringify(order),
          spread: (order: Order) => ({ ...order }).total,
          hasOwn: (order: Order) => Object.hasOwn(order, 'total'),
          isOrder: (order: Order) => order instanceof Order,
        },
      },
    );
    const result = await run(schema, 'mutation { pay { id total keys json spread hasOwn isOrder } }');

    expect(result).toEqual({
      data: {
        pay: {
          id: '7',
          total: 10,
          keys: 'id,total',
          json: '{"id":"7","total":10}',
          spread: 10,
          hasOwn: true,
          isOrder: true,
        },
      },
    });
  });

  it('shows child resolvers a class instance whose promise fields it settled as the instance: its constructor, stable methods, its setters and other writes read back, frozen', async () => {
    class Card {
      readonly id = 'c1';
      readonly amount = Promise.resolve(5);
      cache?: string;
      #note = '';
      get note(): string {
        return this.#note;
      }
      set note(note: string) {
        this.#note = note;
      }
      label(): string {
        return 'card';
      }
    }
    class Cash {
      readonly id = 'k1';
      readonly amount = 7;
    }
    const schema = build(
      `interface Payment { id: ID! amount: Int! }
       type Card implements Payment { id: ID! amount: Int! sameMethod: Boolean! memo: String! note: String! frozenKeys: String! }
       type Cash implements Payment { id: ID! amount: Int! }
       type Query { pays: [Payment!]! @locked(key: "pay:1") }`,
      {
        Query: { pays: () => [new Card(), new Cash()] },
        Payment: {
          __resolveType: (payment: object) =>
            payment.constructor === Card ? 'Card' : payment.constructor.name,
        },
        Card: {
          sameMethod: (card: Card) => {
            const first = card.label;
            return first === card.label;
          },
          memo: (card: Card) => {
            card.cache = 'kept';
            return card.cache;
          },
          note: (card: Card) => {
            card.note = 'noted';
            return card.note;
          },
          frozenKeys: (card: Card) => Object.keys(Object.freeze(card)).join(','),
        },
      },
    );
    const result = await run(
      schema,
      '{ pays { __typename id amount ... on Card { sameMethod memo note frozenKeys } } }',
    );

    expect(result).toEqual({
      data: {
        pays: [
          {
            __typename: 'Card',
            id: 'c1',
            amount: 5,
            sameMethod: true,
            memo: 'kept',
            note: 'noted',
            frozenKeys: 'id,amount,cache',
          },
          { __typename: 'Cash', id: 'k1', amount: 7 },
        ],
      },
    });
  });

  it('settles only the promise fields the operation selects (through aliases and fragments, not those @skip or @include leave out), so lazy queries of the others never run', async () => {
    const ran: [string, boolean][] = [];
    const schema = build(
      `type Order { id: ID! items: [Int!] audit: String notes: String history: [String!] }
       type Query { x: Int }
       type Mutation { pay: Order @locked(key: "order:1") }`,
      {
        Mutation: {
          pay: (_: unknown, __: unknown, ___: unknown, info: GraphQLResolveInfo) => {
            const query = <T>(name: string, value: T) =>
              watched(Promise.resolve(value), () => ran.push([name, !lockOf(info).released]));
            return {
              id: '1',
              items: query('items', [1, 2]),
              audit: query('audit', 'ok'),
              notes: query('notes', 'n'),
              history: query('history', ['h']),
            };
          },
        },
      },
    );
    const result = await run(
      schema,
      'mutation { pay { id notes @skip(if: true) ... on Order { lines: items ...Audit } } } fragment Audit on Order { audit history @include(if: false) }',
    );

    expect(result).toEqual({ data: { pay: { id: '1', lines: [1, 2], audit: 'ok' } } });
    expect(ran.sort()).toEqual([
      ['audit', true],
      ['items', true],
    ]);
  });

  it('waits under the lock for a native promise property the operation does not select: its work is running already', async () => {
    let finishedUnderLock: boolean | undefined;
    const schema = build(
      `type Order { id: ID! audit: String }
       type Query { x: Int }
       type Mutation { pay: Order @locked(key: "order:1") }`,
      {
        Mutation: {
          pay: (_: unknown, __: unknown, ___: unknown, info: GraphQLResolveInfo) => {
            const audit = async () => {
              await new Promise((resolve) => setTimeout(resolve, 20));
              finishedUnderLock = !lockOf(info).released;
              return 'written';
            };
            return { id: '1', audit: audit() };
          },
        },
      },
    );
    const result = await run(schema, 'mutation { pay { id } }');

    expect(result).toEqual({ data: { pay: { id: '1' } } });
    expect(finishedUnderLock).toBe(true);
  });

  it('takes the default HTTP status for an httpStatus entry set to undefined', async () => {
    const schema = build(
      'type Query { order: Int @locked(key: "order:1", wait: 0) }',
      { Query: { order: () => 1 } },
      { httpStatus: { locked: undefined, unavailable: 502 } },
    );
    const holder = await locker.acquire('order:1');
    const result = await run(schema, '{ order }');
    await holder.release();

    expect(codes(result)).toEqual([[['order'], 'LOCKED']]);
    expect(result.errors![0]!.extensions.http).toMatchObject({ status: 409 });
  });

  it('settles promise fields of the objects in a list under the lock, reporting a rejected one at its path', async () => {
    const heldWhenAwaited: string[] = [];
    const receipt = (id: string, info: GraphQLResolveInfo) =>
      watched(id === '2' ? Promise.reject(new Error('printer offline')) : Promise.resolve(`r${id}`), () => {
        lockOf(info).assertHeld();
        heldWhenAwaited.push(id);
      });
    const schema = build(
      `type Order { id: ID! receipt: String }
       type Query { x: Int }
       type Mutation { payAll(ids: [ID!]!): [Order!] @locked(key: "orders") }`,
      {
        Mutation: {
          payAll: (_: unknown, { ids }: { ids: string[] }, __: unknown, info: GraphQLResolveInfo) =>
            ids.map((id) => ({ id, receipt: receipt(id, info) })),
        },
      },
    );
    const result = await run(schema, 'mutation { payAll(ids: [1, 2, 3]) { id receipt } }');

    expect(result.data).toEqual({
      payAll: [
        { id: '1', receipt: 'r1' },
        { id: '2', receipt: null },
        { id: '3', receipt: 'r3' },
      ],
    });
    expect(result.errors?.map((error) => [error.path, error.message])).toEqual([
      [['payAll', 1, 'receipt'], 'printer offline'],
    ]);
    expect(heldWhenAwaited.sort()).toEqual(['1', '2', '3']);
    expect(await locker.isLocked('orders')).toBe(false);
  });

  it('locks fields of code-first schemas that carry the directive in extensions', async () => {
    const { lockedDirectiveTransformer } = lockedDirective({ locker: newLocker() });
    const schema = lockedDirectiveTransformer(
      new GraphQLSchema({
        query: new GraphQLObjectType({
          name: 'Query',
          fields: {
            order: {
              type: GraphQLInt,
              args: { id: { type: new GraphQLNonNull(GraphQLID) } },
              resolve: (_, __, ___, info) => lockOf(info).fence,
              extensions: { directives: { locked: { key: 'order:{args.id}', wait: 0 } } },
            },
          },
        }),
      }),
    );
    const holder = await locker.acquire('order:8');
    const busy = await run(schema, '{ order(id: 8) }');
    await holder.release();
    const free = await run(schema, '{ order(id: 8) }');

    expect(codes(busy)).toEqual([[['order'], 'LOCKED']]);
    expect(free.data!.order).toBeGreaterThan(holder.fence);
  });
});

describe('the default signal option', () => {
  it('reads context.signal when context.request.signal is not an AbortSignal (the default signal option)', async () => {
    let calls = 0;
    const schema = build('type Query { a: Int @locked(key: "a") }', { Query: { a: () => ++calls } });
    const aborted = new AbortController();
    aborted.abort();
    // Some other framework's request object, whose `signal` is not a DOM AbortSignal.
    const context = { request: { signal: { aborted: false } }, signal: aborted.signal };
    const result = await run(schema, '{ a }', context);

    expect(codes(result)).toEqual([[['a'], 'ABORTED']]);
    expect(calls).toBe(0);
  });
});

describe('a schema transformed twice', () => {
  it('locks each field once: with a locker that does not re-enter, the field does not wait on itself', async () => {
    locker = createLocker({ redis: client, prefix: `execute:twice:`, reentrant: false });
    const { lockedDirectiveTypeDefs, lockedDirectiveTransformer } = lockedDirective({ locker });
    const once = lockedDirectiveTransformer(
      makeExecutableSchema({
        typeDefs: [lockedDirectiveTypeDefs, 'type Query { order: Int @locked(key: "order:1", wait: 0) }'],
        resolvers: {
          Query: {
            order: (_: unknown, __: unknown, ___: unknown, info: GraphQLResolveInfo) => lockOf(info).fence,
          },
        },
      }),
    );
    const twice = lockedDirectiveTransformer(once);
    const result = await run(twice, '{ order }');

    expect(result.errors).toBeUndefined();
    expect(result.data!.order).toBeGreaterThan(0);
    // Another factory's transformer of the same directive would lock it a second time, as another owner.
    const other = lockedDirective({ locker });
    expect(() => other.lockedDirectiveTransformer(once)).toThrow(
      'Query.order: @locked was already applied by another lockedDirective() transformer: transform the schema with one of them',
    );
  });

  it('tells the marks of directives of other names apart: each locks the field once', async () => {
    locker = createLocker({ redis: client, prefix: 'execute:two-names:', reentrant: false });
    const locked = lockedDirective({ locker });
    const serial = lockedDirective({ locker, name: 'serial' });
    const held: boolean[][] = [];
    const schema = makeExecutableSchema({
      typeDefs: [
        locked.lockedDirectiveTypeDefs,
        serial.lockedDirectiveTypeDefs,
        'type Query { order: Int @locked(key: "order:1", wait: 0) @serial(key: "serial:1", wait: 0) }',
      ],
      resolvers: {
        Query: {
          order: async () => {
            held.push([await locker.isLocked('order:1'), await locker.isLocked('serial:1')]);
            return 1;
          },
        },
      },
    });
    const both = serial.lockedDirectiveTransformer(locked.lockedDirectiveTransformer(schema));
    const again = locked.lockedDirectiveTransformer(serial.lockedDirectiveTransformer(both));
    const result = await run(again, '{ order }');

    expect(result.errors).toBeUndefined();
    expect(held).toEqual([[true, true]]);
  });
});

describe('a schema transformed twice with another transform in between', () => {
  /**
   * Another package's transform (tracing, auth): it wraps every resolver, keeping the field's
   * extensions; with `copyInfo`, it hands the resolver a copy of `info`.
   */
  function traced(schema: GraphQLSchema, copyInfo = false): GraphQLSchema {
    return mapSchema(schema, {
      [MapperKind.OBJECT_FIELD]: (config) => {
        const resolve = config.resolve ?? defaultFieldResolver;
        return {
          ...config,
          resolve: (source, args, context, info) =>
            resolve(source, args, context, copyInfo ? { ...info } : info),
        };
      },
    });
  }

  function lockedOnce(transformer: (schema: GraphQLSchema) => GraphQLSchema, typeDefs: string) {
    return transformer(
      makeExecutableSchema({
        typeDefs: [typeDefs, 'type Query { order: Int @locked(key: "order:1", wait: 0) }'],
        resolvers: {
          Query: {
            order: (_: unknown, __: unknown, ___: unknown, info: GraphQLResolveInfo) => lockOf(info).fence,
          },
        },
      }),
    );
  }

  it.each([
    ['passes info on', false],
    ['copies info', true],
  ])(
    'still locks each field once when the wrapper %s: a locker that does not re-enter does not answer LOCKED to itself, lockOf answers',
    async (_, copyInfo) => {
      locker = createLocker({ redis: client, prefix: 'execute:twice-wrapped:', reentrant: false });
      const { lockedDirectiveTypeDefs, lockedDirectiveTransformer } = lockedDirective({ locker });
      const twice = lockedDirectiveTransformer(
        traced(lockedOnce(lockedDirectiveTransformer, lockedDirectiveTypeDefs), copyInfo),
      );
      const result = await run(twice, '{ order }');

      expect(result.errors).toBeUndefined();
      expect(result.data!.order).toBeGreaterThan(0);
      expect(await locker.isLocked('order:1')).toBe(false);
    },
  );

  it('takes the lock afresh inside when the outer lock was lost during the wrapper: never runs under a lost lock', async () => {
    locker = createLocker({ redis: client, prefix: 'execute:twice-lost:' });
    const { lockedDirectiveTypeDefs, lockedDirectiveTransformer } = lockedDirective({ locker });
    let other: Lock | undefined;
    const once = lockedDirectiveTransformer(
      makeExecutableSchema({
        typeDefs: [
          lockedDirectiveTypeDefs,
          'type Query { order: Int @locked(key: "order:1", ttl: 2000, wait: 0) }',
        ],
        resolvers: { Query: { order: () => 1 } },
      }),
    );
    // Slow work of another transform between the two locks: the outer lock's fixed lease runs
    // out, and another owner takes the key. The outer acquire must still come back within that
    // lease (a grant answered past it is given back, UNAVAILABLE with wait: 0): 300 ms could be
    // one stalled round trip on a loaded host.
    const slow = mapSchema(once, {
      [MapperKind.OBJECT_FIELD]: (config) => ({
        ...config,
        resolve: async (source, args, context, info) => {
          const outer = lockOf(info);
          await new Promise((resolve) => outer.signal.addEventListener('abort', resolve, { once: true }));
          other = await locker.acquire('order:1', { ttl: 10_000, wait: 2_000 });
          return config.resolve!(source, args, context, info);
        },
      }),
    });
    const result = await run(lockedDirectiveTransformer(slow), '{ order }');

    expect(codes(result)).toEqual([[['order'], 'LOCKED']]);
    await other!.release();
  });

  it("refuses another factory's transformer of the same directive, as without the transform in between", () => {
    const first = lockedDirective({ locker: newLocker() });
    const wrapped = traced(lockedOnce(first.lockedDirectiveTransformer, first.lockedDirectiveTypeDefs));

    expect(() => lockedDirective({ locker }).lockedDirectiveTransformer(wrapped)).toThrow(
      'Query.order: @locked was already applied by another lockedDirective() transformer: transform the schema with one of them',
    );
  });
});

describe('a schema transformed twice with its fields copied or replaced in between', () => {
  const sdl = 'type Mutation { pay(id: ID!): Int @locked(key: "order:{args.id}", wait: 0) }';

  /** A resolver recording whether the order's lock was held while it ran. */
  function recording(held: boolean[]) {
    return async (_: unknown, { id }: { id: string }) => {
      held.push(await locker.isLocked(`order:${id}`));
      return 1;
    };
  }

  function nonReentrant(name: string) {
    locker = createLocker({ redis: client, prefix: `execute:${name}:`, reentrant: false });
    return lockedDirective({ locker });
  }

  it('locks once a merge of two modules it transformed: mergeSchemas copies the mark into a new object', async () => {
    const { lockedDirectiveTypeDefs, lockedDirectiveTransformer } = nonReentrant('merged');
    const held: boolean[] = [];
    const module = (query: string) =>
      lockedDirectiveTransformer(
        makeExecutableSchema({
          typeDefs: [lockedDirectiveTypeDefs, `type Query { ${query}: Int }`, sdl],
          resolvers: { Mutation: { pay: recording(held) } },
        }),
      );
    const merged = mergeSchemas({ schemas: [module('a'), module('b')] });
    const result = await run(lockedDirectiveTransformer(merged), 'mutation { pay(id: 1) }');

    expect(result.errors).toBeUndefined();
    expect(held).toEqual([true]);
  });

  it('locks once a schema whose field extensions were deep-cloned in between', async () => {
    const { lockedDirectiveTypeDefs, lockedDirectiveTransformer } = nonReentrant('cloned');
    const held: boolean[] = [];
    const once = lockedDirectiveTransformer(
      makeExecutableSchema({
        typeDefs: [lockedDirectiveTypeDefs, 'type Query { x: Int }', sdl],
        resolvers: { Mutation: { pay: recording(held) } },
      }),
    );
    const cloned = mapSchema(once, {
      [MapperKind.OBJECT_FIELD]: (config) => ({ ...config, extensions: structuredClone(config.extensions) }),
    });
    const result = await run(lockedDirectiveTransformer(cloned), 'mutation { pay(id: 1) }');

    expect(result.errors).toBeUndefined();
    expect(held).toEqual([true]);
  });

  it('locks a resolver that replaced the locked one in between (addResolversToSchema keeps the mark)', async () => {
    const { lockedDirectiveTypeDefs, lockedDirectiveTransformer } = nonReentrant('replaced');
    const held: boolean[] = [];
    const once = lockedDirectiveTransformer(
      makeExecutableSchema({
        typeDefs: [lockedDirectiveTypeDefs, 'type Query { x: Int }', sdl],
        resolvers: { Mutation: { pay: () => 0 } },
      }),
    );
    const replaced = addResolversToSchema({
      schema: once,
      resolvers: { Mutation: { pay: recording(held) } },
    });
    const result = await run(lockedDirectiveTransformer(replaced), 'mutation { pay(id: 1) }');

    expect(result.errors).toBeUndefined();
    expect(result.data).toEqual({ pay: 1 });
    expect(held).toEqual([true]);
  });
});

describe('two @locked fields with the same key in one operation', () => {
  function sameKeySchema(wait: number) {
    const intervals: [bigint, bigint][] = [];
    const schema = build(
      `type Query {
         a: Int @locked(key: "cart:1", wait: ${wait})
         b: Int @locked(key: "cart:1", wait: ${wait})
       }`,
      {
        Query: {
          a: async () => {
            const entered = process.hrtime.bigint();
            await delay(20);
            intervals.push([entered, process.hrtime.bigint()]);
            return 1;
          },
          b: async () => {
            const entered = process.hrtime.bigint();
            await delay(20);
            intervals.push([entered, process.hrtime.bigint()]);
            return 2;
          },
        },
      },
    );
    return { schema, intervals };
  }

  it('run one after the other: the second waits for the first to settle (no re-entry, no deadlock)', async () => {
    const { schema, intervals } = sameKeySchema(5_000);
    const result = await run(schema, '{ a b }');

    expect(result).toEqual({ data: { a: 1, b: 2 } });
    expect(intervals).toHaveLength(2);
    expect(overlapping(intervals)).toBe(false);
  });

  it('answer LOCKED for the second with wait: 0, also when the operation runs inside runInChain', async () => {
    const { schema, intervals } = sameKeySchema(0);
    const result = await runInChain(() => run(schema, '{ a b }'));

    expect(intervals).toHaveLength(1);
    expect(codes(result)).toHaveLength(1);
    expect(codes(result)![0]![1]).toBe('LOCKED');
    expect(Object.values(result.data!).sort()).toEqual([1, null].sort());
  });

  it("re-enter a lock that encloses the whole operation (a caller's using of the same key), without deadlock", async () => {
    const schema = build(
      `type Query {
         a: Int @locked(key: "cart:1", wait: 0)
         b: Int @locked(key: "cart:1", wait: 0)
       }`,
      {
        Query: {
          a: (_: unknown, __: unknown, ___: unknown, info: never) => lockOf(info).holds,
          b: (_: unknown, __: unknown, ___: unknown, info: never) => lockOf(info).holds,
        },
      },
    );
    const result = await locker.using('cart:1', () => run(schema, '{ a b }'));

    // Both are nested in the caller's hold, so each counts as one more hold of it.
    expect(result.errors).toBeUndefined();
    expect(result.data!.a).toBeGreaterThanOrEqual(2);
    expect(result.data!.b).toBeGreaterThanOrEqual(2);
    expect(await locker.isLocked('cart:1')).toBe(false);
  });
});

describe('a resolver handing its own info to a locked resolver', () => {
  type Resolve = (
    source: unknown,
    args: { id: string },
    context: unknown,
    info: GraphQLResolveInfo,
  ) => unknown;
  const resolverOf = (info: GraphQLResolveInfo, field: string) =>
    (info.parentType.getFields()[field]!.resolve as Resolve | undefined)!;
  /** A schema whose `pay(id)` locks `order:<id>` around `pay`. */
  const payField = (pay: Resolve) =>
    build(
      `type Query { x: Int }
       type Mutation { pay(id: ID!): Int @locked(key: "order:{args.id}") }`,
      { Mutation: { pay } },
    );

  it('takes the other field’s lock for that call, then lockOf answers its own lock again', async () => {
    const schema = build(
      `type Query { x: Int }
       type Mutation {
         pay(id: ID!): String @locked(key: "order:{args.id}")
         audit(id: ID!): String @locked(key: "audit:{args.id}")
       }`,
      {
        Mutation: {
          audit: async (_: unknown, { id }: { id: string }) =>
            `audit held: ${await locker.isLocked(`audit:${id}`)}`,
          pay: async (source: unknown, args: { id: string }, context: unknown, info: GraphQLResolveInfo) => {
            const audited = await resolverOf(info, 'audit')(source, args, context, info);
            const own = lockOf(info);
            return `${audited}; then ${own.key}, released: ${own.released}`;
          },
        },
      },
    );
    const result = await run(schema, 'mutation { pay(id: 1) }');

    expect(result).toEqual({ data: { pay: 'audit held: true; then order:1, released: false' } });
  });

  it('locks the key of the arguments it is given, not only the field: the same field for another key', async () => {
    const held: boolean[] = [];
    const schema = payField(async (source, args, context, info) => {
      if (args.id === '1') await resolverOf(info, 'pay')(source, { id: '2' }, context, info);
      else held.push(await locker.isLocked('order:2'));
      return Number(args.id);
    });
    const result = await run(schema, 'mutation { pay(id: 1) }');

    expect(result).toEqual({ data: { pay: 1 } });
    expect(held).toEqual([true]);
  });

  it('keeps the locks of calls running at the same time apart, also when they end in the order they began', async () => {
    const seen: string[] = [];
    const firstIn = gate();
    const secondIn = gate();
    const firstOut = gate();
    const describeLock = async (who: string, info: GraphQLResolveInfo, key: string) => {
      const lock = lockOf(info);
      seen.push(
        `${who}: ${lock.key}, released: ${lock.released}, ${key} held: ${await locker.isLocked(key)}`,
      );
    };
    let payments = 0;
    const schema = build(
      `type Query { x: Int }
       type Mutation {
         pay(id: ID!): String @locked(key: "order:{args.id}")
         payMany: String @locked(key: "batch")
       }`,
      {
        Mutation: {
          pay: async (_: unknown, { id }: { id: string }, __: unknown, info: GraphQLResolveInfo) => {
            payments += 1;
            // The first pay(1) is inside when pay(2) starts, and ends before it.
            if (payments === 1) {
              firstIn.open();
              await secondIn.promise;
            } else if (id === '2') {
              secondIn.open();
              await firstOut.promise;
            }
            await describeLock(`pay(${id})`, info, `order:${id}`);
            return id;
          },
          payMany: async (source: unknown, _: unknown, context: unknown, info: GraphQLResolveInfo) => {
            const pay = resolverOf(info, 'pay');
            const first = pay(source, { id: '1' }, context, info);
            await firstIn.promise;
            const second = pay(source, { id: '2' }, context, info);
            await first;
            firstOut.open();
            await second;
            await describeLock('payMany', info, 'batch');
            await pay(source, { id: '1' }, context, info);
            return 'paid';
          },
        },
      },
    );
    const result = await run(schema, 'mutation { payMany }');

    expect(result).toEqual({ data: { payMany: 'paid' } });
    expect(seen).toEqual([
      'pay(1): order:1, released: false, order:1 held: true',
      'pay(2): order:2, released: false, order:2 held: true',
      'payMany: batch, released: false, batch held: true',
      'pay(1): order:1, released: false, order:1 held: true',
    ]);
  });

  it('takes the key afresh for a call with the info of a resolver that released its lock early', async () => {
    const held: boolean[] = [];
    const schema = payField(async (source, args, context, info) => {
      held.push(await locker.isLocked('order:1'));
      if (held.length > 1) return 2;
      await lockOf(info).release();
      return resolverOf(info, 'pay')(source, args, context, info);
    });
    const result = await run(schema, 'mutation { pay(id: 1) }');

    expect(result).toEqual({ data: { pay: 2 } });
    expect(held).toEqual([true, true]);
  });

  it('throws LockedDirectiveError from lockOf in a resolver without the directive, also after it handed its info to a locked resolver', async () => {
    const schema = build(
      `type Query { x: Int }
       type Mutation {
         audit(id: ID!): String @locked(key: "audit:{args.id}")
         plain(id: ID!): String
       }`,
      {
        Mutation: {
          audit: () => 'audited',
          plain: async (
            source: unknown,
            args: { id: string },
            context: unknown,
            info: GraphQLResolveInfo,
          ) => {
            await resolverOf(info, 'audit')(source, args, context, info);
            return lockOf(info).key;
          },
        },
      },
    );
    const result = await run(schema, 'mutation { plain(id: 1) }');

    expect(result.data).toEqual({ plain: null });
    expect(result.errors![0]!.originalError).toBeInstanceOf(LockedDirectiveError);
    expect(result.errors![0]!.message).toMatch(/^Mutation\.plain: lockOf\(info\) found no lock/);
  });
});

/** A thenable for `promise` that calls `onAwait` whenever something waits for it. */
function watched<T>(promise: Promise<T>, onAwait: () => void): PromiseLike<T> {
  return {
    // biome-ignore lint/suspicious/noThenProperty: a thenable is the point
    then(onFulfilled, onRejected) {
      onAwait();
      return promise.then(onFulfilled, onRejected);
    },
  };
}
