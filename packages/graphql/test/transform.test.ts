import { makeExecutableSchema } from '@graphql-tools/schema';
import { createLocker, InvalidOptionError, type Locker, legacyProtocol } from '@lock/core';
import { type RedisServer, refusalHiding, startRedis } from '@lock/testing';
import { GraphQLInt, GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LockedDirectiveError, lockedDirective } from '../src/index.js';

let redis: RedisServer;
let locker: Locker;

beforeAll(async () => {
  redis = await startRedis();
  locker = createLocker({ redis: redis.client(), prefix: 'transform:' });
});

afterAll(async () => {
  await locker.close();
  await redis.stop();
});

function transform(sdl: string, keys = {}) {
  const { lockedDirectiveTypeDefs, lockedDirectiveTransformer } = lockedDirective({ locker, keys });
  const schema = makeExecutableSchema({
    typeDefs: [
      lockedDirectiveTypeDefs,
      `input PayInput { orderId: ID, card: Card, tags: [String!] }
       input Card { number: String! }
       ${sdl}`,
    ],
  });
  return () => lockedDirectiveTransformer(schema);
}

describe('templates are checked when the schema is transformed', () => {
  it.each([
    [
      'an argument the field does not have',
      'type Mutation { payOrder(id: ID!): Int @locked(key: "order:{args.orderId}") } type Query { x: Int }',
      'Mutation.payOrder: @locked(key: "order:{args.orderId}") names args.orderId, but Mutation.payOrder has no argument "orderId" (it has: id)',
    ],
    [
      'a field the input object does not have',
      'type Mutation { pay(input: PayInput!): Int @locked(key: "order:{args.input.id}") } type Query { x: Int }',
      'Mutation.pay: @locked(key: "order:{args.input.id}") names args.input.id, but input PayInput has no field "id"',
    ],
    [
      'an input object instead of a scalar',
      'type Mutation { pay(input: PayInput!): Int @locked(key: "card:{args.input.card}") } type Query { x: Int }',
      'Mutation.pay: @locked(key: "card:{args.input.card}") names args.input.card, which is Card: a key segment must be a scalar or an enum',
    ],
    [
      'a list',
      'type Mutation { pay(input: PayInput!): Int @locked(key: "tag:{args.input.tags}") } type Query { x: Int }',
      'Mutation.pay: @locked(key: "tag:{args.input.tags}") names args.input.tags, which is [String!]: a key segment must be a scalar or an enum',
    ],
    [
      'a path through a scalar',
      'type Mutation { payOrder(id: ID!): Int @locked(key: "order:{args.id.x}") } type Query { x: Int }',
      'Mutation.payOrder: @locked(key: "order:{args.id.x}") names args.id.x, but args.id is ID, not an input object',
    ],
    [
      'a key function that was not given',
      'type Mutation { payOrder(id: ID!): Int @locked(key: "cart:{keys.cartOf}") } type Query { x: Int }',
      'Mutation.payOrder: @locked(key: "cart:{keys.cartOf}") names {keys.cartOf}, but the keys option has no function "cartOf" (it has: none)',
    ],
    [
      'an unknown source',
      'type Mutation { payOrder(id: ID!): Int @locked(key: "order:{source.id}") } type Query { x: Int }',
      'Mutation.payOrder: @locked(key: "order:{source.id}") has a segment {source.id}: expected {args.name}, {context.name} or {keys.name}',
    ],
    [
      'a lone brace',
      'type Mutation { payOrder(id: ID!): Int @locked(key: "order:{args.id") } type Query { x: Int }',
      'Mutation.payOrder: @locked(key: "order:{args.id") has a lone "{" (write "{{" for a literal brace)',
    ],
    [
      'an empty key',
      'type Mutation { payOrder(id: ID!): Int @locked(key: "") } type Query { x: Int }',
      'Mutation.payOrder: @locked(key: "") is empty',
    ],
    [
      'a negative ttl',
      'type Mutation { payOrder(id: ID!): Int @locked(key: "order:{args.id}", ttl: -1) } type Query { x: Int }',
      'Mutation.payOrder: @locked(ttl: -1) is refused by the locker: invalid option "ttl": -1 (expected an integer number of ms from 10 to 2147483647)',
    ],
    [
      // GraphQL's SDL validation does not check argument values: graphql-tools refuses it when read.
      'a ttl of the wrong type',
      'type Mutation { payOrder(id: ID!): Int @locked(key: "order:{args.id}", ttl: "5000") } type Query { x: Int }',
      'Mutation.payOrder: @locked cannot be read: Argument "ttl" has invalid value "5000".',
    ],
    [
      'a key function named after a member of Object.prototype',
      'type Mutation { payOrder(id: ID!): Int @locked(key: "cart:{keys.toString}") } type Query { x: Int }',
      'Mutation.payOrder: @locked(key: "cart:{keys.toString}") names {keys.toString}, but the keys option has no function "toString" (it has: none)',
    ],
    [
      'two segments side by side',
      'type Mutation { pay(a: ID!, b: ID!): Int @locked(key: "pair:{args.a}{args.b}") } type Query { x: Int }',
      'Mutation.pay: @locked(key: "pair:{args.a}{args.b}") has {args.a}{args.b} side by side: put a separator between them, or their values could not be told apart',
    ],
    [
      'a backslash between two segments',
      String.raw`type Mutation { pay(a: ID!, b: ID!): Int @locked(key: "pair:{args.a}\\{args.b}") } type Query { x: Int }`,
      String.raw`Mutation.pay: @locked(key: "pair:{args.a}\\{args.b}") has a backslash right after {args.a}: its values could not be told apart, start the separator with another character`,
    ],
    [
      'an empty list as the key',
      'type Mutation { payOrder(id: ID!): Int @locked(key: []) } type Query { x: Int }',
      'Mutation.payOrder: @locked cannot be read: Argument "key" has invalid value [].',
    ],
    [
      // Only an argument left out takes the default, as in the factory's options.
      'a null ttl',
      'type Mutation { payOrder(id: ID!): Int @locked(key: "order:{args.id}", ttl: null) } type Query { x: Int }',
      'Mutation.payOrder: @locked(ttl: null) is refused by the locker: invalid option "ttl": null (expected an integer number of ms from 10 to 2147483647)',
    ],
    [
      'a null wait',
      'type Mutation { payOrder(id: ID!): Int @locked(key: "order:{args.id}", wait: null) } type Query { x: Int }',
      'Mutation.payOrder: @locked(wait: null) is refused by the locker: invalid option "wait": null (expected a non-negative integer number of ms, or Infinity)',
    ],
    [
      'a key whose text alone is longer than a locker takes',
      `type Mutation { pay(id: ID!): Int @locked(key: "${'k'.repeat(4_095)}:{args.id}") } type Query { x: Int }`,
      'makes keys longer than the 4096 bytes a locker takes by its text alone',
    ],
  ])('refuses %s, naming the field and the argument', (_, sdl, message) => {
    expect(transform(sdl)).toThrowError(LockedDirectiveError);
    expect(transform(sdl)).toThrow(message);
  });

  it('refuses a code-first template whose text holds a lone surrogate: no key could hold it', () => {
    const { lockedDirectiveTransformer } = lockedDirective({ locker });
    // SDL cannot hold one (a syntax error): a code-first string can.
    const schema = new GraphQLSchema({
      query: new GraphQLObjectType({
        name: 'Query',
        fields: {
          order: {
            type: GraphQLInt,
            args: { id: { type: GraphQLString } },
            extensions: { directives: { locked: { key: 'order\uD800:{args.id}' } } },
          },
        },
      }),
    });
    const apply = () => lockedDirectiveTransformer(schema);

    expect(apply).toThrowError(LockedDirectiveError);
    expect(apply).toThrow(
      'Query.order: @locked(key: "order\\ud800:{args.id}") holds a lone UTF-16 surrogate, which Redis would receive as U+FFFD: the locker refuses every key holding one',
    );
  });

  it('accepts literal braces, input-object paths, context and key functions', () => {
    const apply = transform(
      'type Mutation { pay(input: PayInput!): Int @locked(key: "{{t}}:{context.tenant}:{args.input.orderId}:{keys.cart}") } type Query { x: Int }',
      { cart: () => 'c' },
    );
    expect(apply).not.toThrow();
  });
});

describe('fields the directive refuses', () => {
  it('refuses a subscription field', () => {
    const apply = transform(
      'type Subscription { paid(id: ID!): Int @locked(key: "order:{args.id}") } type Query { x: Int }',
    );
    expect(apply).toThrow(/^Subscription\.paid: @locked cannot lock a subscription field/);
  });

  it('refuses an interface field, whose resolvers belong to the object types', () => {
    const apply = transform(
      'interface Payable { pay(id: ID!): Int @locked(key: "order:{args.id}") } type Query { x: Int }',
    );
    expect(apply).toThrow(/^Payable\.pay: @locked on an interface field would lock nothing/);
  });

  const anywhere = (sdl: string) => {
    const { lockedDirectiveTransformer } = lockedDirective({ locker });
    const schema = makeExecutableSchema({
      typeDefs: [
        // A declaration wider than lockedDirectiveTypeDefs' (code-first extensions can put it anywhere too).
        'directive @locked(key: String!, ttl: Int, wait: Int) on FIELD_DEFINITION | SCHEMA | OBJECT | ARGUMENT_DEFINITION | INPUT_FIELD_DEFINITION | ENUM_VALUE',
        'input PayInput { orderId: ID }',
        'enum Speed { NOW LATER }',
        sdl,
      ],
    });
    return () => lockedDirectiveTransformer(schema);
  };

  it.each([
    [
      'the schema definition',
      'schema @locked(key: "all") { query: Query } type Query { x: Int }',
      'schema: @locked on the schema would lock nothing: put it on the fields whose calls it should lock',
    ],
    [
      'an object type',
      'type Mutation @locked(key: "all") { pay(id: ID!): Int } type Query { x: Int }',
      'Mutation: @locked on a type would lock nothing: put it on the fields whose calls it should lock',
    ],
    [
      'an argument',
      'type Mutation { pay(id: ID! @locked(key: "order:{args.id}")): Int } type Query { x: Int }',
      'Mutation.pay(id:): @locked on an argument would lock nothing: put it on the fields whose calls it should lock',
    ],
    [
      'an input field',
      'input Order { id: ID @locked(key: "order") } type Query { x(o: Order): Int }',
      'Order.id: @locked on an input field would lock nothing: put it on the fields whose calls it should lock',
    ],
    [
      'an enum value',
      'enum Lane { FAST @locked(key: "lane") } type Query { x(l: Lane): Int }',
      'Lane.FAST: @locked on an enum value would lock nothing: put it on the fields whose calls it should lock',
    ],
  ])('refuses the directive on %s, where it would lock nothing', (_, sdl, message) => {
    expect(anywhere(sdl)).toThrowError(LockedDirectiveError);
    expect(anywhere(sdl)).toThrow(message);
  });

  it('refuses a code-first directive on an object type or on the schema', () => {
    const { lockedDirectiveTransformer } = lockedDirective({ locker });
    const query = (extensions = {}) =>
      new GraphQLObjectType({ name: 'Query', extensions, fields: { order: { type: GraphQLInt } } });
    const onType = new GraphQLSchema({ query: query({ directives: { locked: { key: 'all' } } }) });
    const onSchema = new GraphQLSchema({
      query: query(),
      extensions: { directives: { locked: { key: 'all' } } },
    });
    expect(() => lockedDirectiveTransformer(onType)).toThrow(
      'Query: @locked on a type would lock nothing: put it on the fields whose calls it should lock',
    );
    expect(() => lockedDirectiveTransformer(onSchema)).toThrow(
      'schema: @locked on the schema would lock nothing: put it on the fields whose calls it should lock',
    );
  });

  it('refuses unknown or mistyped arguments in code-first extensions', () => {
    const { lockedDirectiveTransformer } = lockedDirective({ locker });
    const schemaWith = (directives: Record<string, unknown>) =>
      new GraphQLSchema({
        query: new GraphQLObjectType({
          name: 'Query',
          fields: {
            order: { type: GraphQLInt, args: { id: { type: GraphQLString } }, extensions: { directives } },
          },
        }),
      });
    expect(() =>
      lockedDirectiveTransformer(schemaWith({ locked: { key: 'o:{args.id}', timeout: 5 } })),
    ).toThrow('Query.order: @locked has no argument "timeout" (it has: key, ttl, wait)');
    expect(() => lockedDirectiveTransformer(schemaWith({ locked: { key: 5 } }))).toThrow(
      'Query.order: @locked(key: 5) must be a key template string',
    );
    expect(() => lockedDirectiveTransformer(schemaWith({ locked: { key: 'o', wait: 1.5 } }))).toThrow(
      'Query.order: @locked(wait: 1.5) is refused by the locker: invalid option "wait": 1.5 (expected a non-negative integer number of ms, or Infinity)',
    );
    expect(() => lockedDirectiveTransformer(schemaWith({ locked: { key: 'o', ttl: 2 ** 31 } }))).toThrow(
      'Query.order: @locked(ttl: 2147483648) is refused by the locker: invalid option "ttl": 2147483648 (expected an integer number of ms from 10 to 2147483647)',
    );
    expect(() => lockedDirectiveTransformer(schemaWith({ locked: [{ key: 'a' }, { key: 'b' }] }))).toThrow(
      'Query.order: has @locked 2 times',
    );
  });
});

describe('directive values are printed as given', () => {
  const schemaWith = (locked: unknown) =>
    new GraphQLSchema({
      query: new GraphQLObjectType({
        name: 'Query',
        fields: { order: { type: GraphQLInt, extensions: { directives: { locked } } } },
      }),
    });

  it.each([
    [
      'a string ttl',
      { key: 'o', ttl: '0' },
      'Query.order: @locked(ttl: "0") is refused by the locker: invalid option "ttl": "0" (expected an integer number of ms from 10 to 2147483647)',
    ],
    [
      'a list wait',
      { key: 'o', wait: [5000] },
      'Query.order: @locked(wait: [5000]) is refused by the locker: invalid option "wait": [5000] (expected a non-negative integer number of ms, or Infinity)',
    ],
    [
      'a NaN ttl',
      { key: 'o', ttl: Number.NaN },
      'Query.order: @locked(ttl: NaN) is refused by the locker: invalid option "ttl": NaN (expected an integer number of ms from 10 to 2147483647)',
    ],
    ['a list key', { key: ['o'] }, 'Query.order: @locked(key: ["o"]) must be a key template string'],
    ['an empty list key', { key: [] }, 'Query.order: @locked(key: []) must be a key template string'],
    [
      'a null wait',
      { key: 'o', wait: null },
      'Query.order: @locked(wait: null) is refused by the locker: invalid option "wait": null (expected a non-negative integer number of ms, or Infinity)',
    ],
    ['null arguments', null, 'Query.order: @locked must be given its arguments as an object, not null'],
    // graphql-tools reads an empty list as no directive: the field would run unlocked.
    ['an empty list', [], 'Query.order: @locked must be given its arguments as an object, not []'],
    ['a string', 'order:1', 'Query.order: @locked must be given its arguments as an object, not "order:1"'],
  ])('refuses %s, naming its value', (_, directive, message) => {
    const { lockedDirectiveTransformer } = lockedDirective({ locker });
    expect(() => lockedDirectiveTransformer(schemaWith(directive))).toThrow(message);
  });
});

describe('factory options', () => {
  it.each([
    [
      { locker: undefined },
      'invalid option "locker": undefined (expected a Locker from @lock/core (or any package built on it))',
    ],
    [{ locker: { acquire() {} } }, 'invalid option "locker": {}'],
    // Every field call goes through `using`: a locker without it would fail each call instead.
    [
      { locker: { acquire() {}, checkOptions() {} } },
      'invalid option "locker": {} (expected a Locker from @lock/core (or any package built on it))',
    ],
    [{ name: 'lock-ed' }, 'invalid option "name": "lock-ed" (expected a GraphQL name)'],
    // GraphQL reserves names starting with "__" for introspection.
    [
      { name: '__locked' },
      'invalid option "name": "__locked" (expected a GraphQL name not starting with "__", which GraphQL reserves)',
    ],
    [{ ttl: 0 }, 'invalid option "ttl": 0 (expected an integer number of ms from 10 to 2147483647)'],
    [{ wait: -5 }, 'invalid option "wait": -5 (expected a non-negative integer number of ms, or Infinity)'],
    [{ keys: { cart: 'x' } }, 'invalid option "keys.cart": "x" (expected a function)'],
    // Taken for a list of lock keys, an array would pass as an object of no key functions.
    [
      { keys: [] },
      `invalid option "keys": [] (expected an object of key functions by name, such as { cartOf: (args, context, info) => … }, not a list or a Map (the lock key is the directive's key template))`,
    ],
    [
      { keys: ['order:{args.id}'] },
      'invalid option "keys": ["order:{args.id}"] (expected an object of key functions',
    ],
    [
      { keys: new Map([['cart', () => 'c']]) },
      'invalid option "keys": an instance of Map (expected an object of key functions',
    ],
    [{ httpStatus: [] }, 'invalid option "httpStatus": [] (expected a boolean or { locked, unavailable })'],
    [
      { httpStatus: { locked: 200 } },
      'invalid option "httpStatus.locked": 200 (expected an HTTP error status from 400 to 599)',
    ],
    [{ onLocked: 'null' }, 'invalid option "onLocked": "null" (expected a function)'],
    [{ fieldResolver: {} }, 'invalid option "fieldResolver": {} (expected a function)'],
    [
      { httpStatus: { lockd: undefined } },
      'unknown option "httpStatus.lockd" (expected one of the httpStatus options: locked, unavailable). Did you mean "httpStatus.locked"?',
    ],
    [{ timeout: 5 }, 'unknown option "timeout" (expected one of the lockedDirective() options: '],
  ])('refuses %j', (options, message) => {
    const create = () => lockedDirective({ locker, ...options } as never);
    expect(create).toThrowError(InvalidOptionError);
    expect(create).toThrow(message);
  });

  it('refuses an unknown option by name without showing or keeping its value, with the name it likely stands for', async () => {
    const secret = 'hunter2-not-to-be-logged';
    const refusal = (options: Record<string, unknown>) =>
      refusalHiding(secret, () => lockedDirective({ locker, ...options } as never));
    const typo = await refusal({ onLockd: secret });
    expect(typo).toBeInstanceOf(InvalidOptionError);
    expect(typo).toMatchObject({ option: 'onLockd', value: undefined });
    expect(typo.message).toBe(
      'unknown option "onLockd" (expected one of the lockedDirective() options: locker, name, ttl, wait, keys, onLocked, httpStatus, signal, fieldResolver). Did you mean "onLocked"?',
    );
    const nested = await refusal({ httpStatus: { lockd: secret } });
    expect(nested).toMatchObject({ option: 'httpStatus.lockd', value: undefined });
    expect((await refusal({ password: secret })).message).not.toContain('Did you mean');
  });

  it('accepts key functions held by a class instance or an object of another prototype, as their own properties', () => {
    class Keys {
      cart = () => 'c';
    }
    const inherited = Object.assign(Object.create({ inheritedOnly: () => 'i' }), { cart: () => 'c' });
    for (const keys of [new Keys(), inherited]) {
      expect(transform('type Query { x: Int @locked(key: "c:{keys.cart}") }', keys)).not.toThrow();
    }
    expect(transform('type Query { x: Int @locked(key: "i:{keys.inheritedOnly}") }', inherited)).toThrow(
      'names {keys.inheritedOnly}, but the keys option has no function "inheritedOnly" (it has: cart)',
    );
  });

  it('accepts key functions from an object without a prototype, and only its enumerable functions', () => {
    // A non-enumerable property is never checked: a template naming it would fail every call.
    const keys = Object.defineProperty(Object.create(null), 'hidden', { value: 'not a function' });
    keys.cart = () => 'c';
    expect(transform('type Query { x: Int @locked(key: "c:{keys.cart}") }', keys)).not.toThrow();
    expect(transform('type Query { x: Int @locked(key: "h:{keys.hidden}") }', keys)).toThrow(
      'Query.x: @locked(key: "h:{keys.hidden}") names {keys.hidden}, but the keys option has no function "hidden" (it has: cart)',
    );
  });

  it.each(['include', 'skip', 'deprecated', 'specifiedBy', 'oneOf'])(
    'refuses the name of the built-in directive @%s',
    (name) => {
      const create = () => lockedDirective({ locker, name });
      expect(create).toThrowError(InvalidOptionError);
      expect(create).toThrow(
        `invalid option "name": "${name}" (expected a name other than GraphQL's own include, skip, deprecated, specifiedBy, oneOf)`,
      );
    },
  );

  it("refuses a ttl the locker's format refuses, as a factory option and as a directive argument", async () => {
    const seconds = createLocker({
      redis: redis.client(),
      protocol: legacyProtocol({ unit: 's' }),
      prefix: '',
    });
    expect(() => lockedDirective({ locker: seconds, ttl: 1_500 })).toThrow(
      /invalid option "ttl": 1500 \(expected whole seconds/,
    );
    const { lockedDirectiveTypeDefs, lockedDirectiveTransformer } = lockedDirective({ locker: seconds });
    const schema = (ttl: number) =>
      makeExecutableSchema({
        typeDefs: [
          lockedDirectiveTypeDefs,
          `type Mutation { pay(id: ID!): Int @locked(key: "order:{args.id}", ttl: ${ttl}) } type Query { x: Int }`,
        ],
      });
    expect(() => lockedDirectiveTransformer(schema(1_500))).toThrow(
      /^Mutation\.pay: @locked\(ttl: 1500\) is refused by the locker: invalid option "ttl": 1500 \(expected whole seconds/,
    );
    expect(() => lockedDirectiveTransformer(schema(2_000))).not.toThrow();
    await seconds.close();
  });

  it('leaves the rule for a directive wait to the locker, keeping its refusal as the cause', () => {
    // A locker of your own (a wrapper with a policy) may refuse more than core does.
    const patient = Object.create(locker, {
      checkOptions: {
        value(options: { wait?: number }) {
          if ((options.wait ?? 0) > 5_000) throw new InvalidOptionError('wait', options.wait, 'at most 5000');
          locker.checkOptions(options);
        },
      },
    }) as Locker;
    const { lockedDirectiveTypeDefs, lockedDirectiveTransformer } = lockedDirective({ locker: patient });
    const schema = makeExecutableSchema({
      typeDefs: [
        lockedDirectiveTypeDefs,
        'type Mutation { pay(id: ID!): Int @locked(key: "order:{args.id}", wait: 6000) } type Query { x: Int }',
      ],
    });
    let refusal: unknown;
    try {
      lockedDirectiveTransformer(schema);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(LockedDirectiveError);
    expect((refusal as Error).message).toBe(
      'Mutation.pay: @locked(wait: 6000) is refused by the locker: invalid option "wait": 6000 (expected at most 5000)',
    );
    expect((refusal as Error).cause).toBeInstanceOf(InvalidOptionError);
  });

  it('names the directive as told', () => {
    const { lockedDirectiveTypeDefs } = lockedDirective({ locker, name: 'serial' });
    expect(lockedDirectiveTypeDefs).toContain(
      'directive @serial(key: String!, ttl: Int, wait: Int) on FIELD_DEFINITION',
    );
  });
});
