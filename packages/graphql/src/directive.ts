import { randomUUID } from 'node:crypto';
import { MapperKind, mapSchema } from '@graphql-tools/utils';
import type { Locker } from '@lock/core';
import {
  type GraphQLFieldConfig,
  type GraphQLOutputType,
  type GraphQLSchema,
  getNamedType,
  getNullableType,
  isCompositeType,
  isListType,
} from 'graphql';
import { type AppliedMark, appliedMark, isMarkOf, withMark } from './applied-mark.js';
import { checkOptions } from './check-options.js';
import { LockedDirectiveError } from './directive-error.js';
import { type LockedField, lockedResolvers } from './locked-resolver.js';
import type { LockedDirectiveOptions, Settings } from './options.js';
import { onlyDirective, refuseElsewhere } from './placement.js';
import { show } from './show-value.js';
import { parseTemplate } from './template.js';

/** What `lockedDirective` returns: the SDL to add to your type definitions, and the schema transformer. */
export interface LockedDirective {
  /** `directive @locked(key: String!, ttl: Int, wait: Int) on FIELD_DEFINITION` (under the chosen name). */
  readonly lockedDirectiveTypeDefs: string;
  /**
   * Returns a schema whose `@locked` fields (in SDL or in a field's `extensions.directives`)
   * run under their lock. Throws `LockedDirectiveError` for a directive it cannot apply.
   */
  readonly lockedDirectiveTransformer: (schema: GraphQLSchema) => GraphQLSchema;
}

const DIRECTIVE_ARGS = ['key', 'ttl', 'wait'];

/**
 * The `@locked` directive: operations calling a field with the same key run one at a time.
 *
 * ```ts
 * const { lockedDirectiveTypeDefs, lockedDirectiveTransformer } = lockedDirective({ locker });
 * ```
 */
export function lockedDirective(options: LockedDirectiveOptions): LockedDirective {
  const settings = checkOptions(options);
  const name = settings.name;
  // Marks the fields this call's transformer locked: a schema it transforms again (a build step
  // run twice) must not lock a field twice, where the inner lock would wait on the outer one
  // unless the locker re-enters.
  const mark: AppliedMark = Object.freeze({ directive: name, factory: randomUUID() });
  const resolvers = lockedResolvers(settings);
  return {
    lockedDirectiveTypeDefs: `"""
Calls of this field with the same key run one at a time, each holding a Redis lock while its resolver runs.
key: template such as "order:{args.id}"; ttl: lease in ms; wait: how long to wait for a busy lock, in ms.
"""
directive @${name}(key: String!, ttl: Int, wait: Int) on FIELD_DEFINITION
`,
    lockedDirectiveTransformer: (schema) =>
      mapSchema(schema, {
        ...refuseElsewhere(schema, name),
        [MapperKind.OBJECT_FIELD]: (config, fieldName, typeName) => {
          const coordinate = `${typeName}.${fieldName}`;
          const directive = onlyDirective(schema, config, coordinate, name);
          if (directive === undefined) return config;
          if (typeName === schema.getSubscriptionType()?.name) {
            throw new LockedDirectiveError(
              coordinate,
              `@${name} cannot lock a subscription field: a lock held for the life of an event stream would starve every other caller`,
            );
          }
          const applied = appliedMark(config, name);
          // Another factory's transformer of the same name already locked it: a second lock
          // would wait on the first (each has its own owner) and the field would refuse itself.
          if (applied !== undefined && !isMarkOf(applied, mark.factory))
            throw new LockedDirectiveError(
              coordinate,
              `@${name} was already applied by another lockedDirective() transformer: transform the schema with one of them`,
            );
          // Marked by us but with another resolver: a transform wrapped ours (the nested lock
          // then steps aside at run time) or replaced it (its lock is gone), so lock it again.
          if (applied !== undefined && resolvers.made(config.resolve)) return config;
          const field = lockedField(directive, config, coordinate, settings);
          const resolve = resolvers.wrap(config.resolve ?? settings.fieldResolver, field);
          return withMark({ ...config, resolve }, mark);
        },
        [MapperKind.INTERFACE_FIELD]: (config, fieldName, typeName) => {
          const coordinate = `${typeName}.${fieldName}`;
          if (onlyDirective(schema, config, coordinate, name) === undefined) return config;
          throw new LockedDirectiveError(
            coordinate,
            `@${name} on an interface field would lock nothing (resolvers belong to object types): put it on the fields of the implementing types`,
          );
        },
      }),
  };
}

function lockedField(
  directive: Record<string, unknown>,
  config: GraphQLFieldConfig<unknown, unknown>,
  coordinate: string,
  settings: Settings,
): LockedField {
  const at = `@${settings.name}`;
  for (const argument of Object.keys(directive)) {
    if (!DIRECTIVE_ARGS.includes(argument))
      throw new LockedDirectiveError(
        coordinate,
        `${at} has no argument "${argument}" (it has: key, ttl, wait)`,
      );
  }
  const { key, ttl, wait } = directive;
  if (typeof key !== 'string')
    throw new LockedDirectiveError(coordinate, `${at}(key: ${show(key)}) must be a key template string`);
  return {
    coordinate,
    // Only an argument left out takes the default: `ttl: null` is refused as the locker refuses it.
    ttl: ttl === undefined ? settings.ttl : lockerChecked(settings.locker, 'ttl', ttl, coordinate, at),
    wait: wait === undefined ? settings.wait : lockerChecked(settings.locker, 'wait', wait, coordinate, at),
    // After ttl and wait: their refusals come first, as they did.
    template: parseTemplate(key, { coordinate, args: config.args }, settings.keys, at),
    listDepth: listDepth(config.type),
    composite: isCompositeType(getNamedType(config.type)),
  };
}

function listDepth(type: GraphQLOutputType): number {
  const nullable = getNullableType(type);
  return isListType(nullable) ? 1 + listDepth(nullable.ofType) : 0;
}

/**
 * The locker owns the rule for its options (a format in whole seconds refuses more than core's
 * range), so a directive argument it would refuse on every call fails the schema instead.
 */
function lockerChecked(
  locker: Locker,
  name: 'ttl' | 'wait',
  value: unknown,
  coordinate: string,
  at: string,
): number {
  try {
    locker.checkOptions({ [name]: value });
  } catch (error) {
    throw new LockedDirectiveError(
      coordinate,
      `${at}(${name}: ${show(value)}) is refused by the locker: ${(error as Error).message}`,
      { cause: error },
    );
  }
  return value as number;
}
