import {
  type DirectableGraphQLObject,
  getDirective,
  MapperKind,
  type SchemaMapper,
} from '@graphql-tools/utils';
import {
  type GraphQLNamedType,
  type GraphQLSchema,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
} from 'graphql';
import { LockedDirectiveError } from './directive-error.js';
import { show } from './show-value.js';

/** The arguments of the one directive `name` on `node`, or `undefined` when it has none. */
export function onlyDirective(
  schema: GraphQLSchema,
  node: DirectableGraphQLObject,
  coordinate: string,
  name: string,
): Record<string, unknown> | undefined {
  let found: unknown[] | undefined;
  try {
    found = getDirective(schema, node, name);
  } catch (error) {
    // SDL validation leaves argument values unchecked (`ttl: "5000"`): reading them refuses them.
    throw new LockedDirectiveError(coordinate, `@${name} cannot be read: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (found === undefined || found.length === 0) {
    // graphql-tools reads `locked: []` as no directive at all: the field would run unlocked.
    if (isEmptyList(node.extensions?.directives, name))
      throw new LockedDirectiveError(coordinate, `@${name} must be given its arguments as an object, not []`);
    return undefined;
  }
  if (found.length > 1) throw new LockedDirectiveError(coordinate, `has @${name} ${found.length} times`);
  const [args] = found;
  // Code-first extensions take any value: `locked: null` must not fail as a bare TypeError.
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    throw new LockedDirectiveError(
      coordinate,
      `@${name} must be given its arguments as an object, not ${show(args)}`,
    );
  return args as Record<string, unknown>;
}

function isEmptyList(directives: unknown, name: string): boolean {
  if (typeof directives !== 'object' || directives === null) return false;
  const entry = (directives as Record<string, unknown>)[name];
  return Array.isArray(entry) && entry.length === 0;
}

/**
 * Refuses the directive wherever it would lock nothing: only the fields of object types have
 * resolvers to wrap (interface fields are refused by the field mapper, with their own advice).
 * GraphQL validation keeps it on fields in SDL declared by `lockedDirectiveTypeDefs`, but not in
 * code-first extensions or under a wider declaration of the directive. The schema itself, which
 * no mapper visits, is checked at once; its types as the mapper visits them.
 */
export function refuseElsewhere(schema: GraphQLSchema, name: string): SchemaMapper {
  refuseOn(schema, schema, 'schema', 'the schema', name);
  return {
    [MapperKind.TYPE]: (type) => {
      for (const [node, coordinate, what] of placesIn(type)) refuseOn(schema, node, coordinate, what, name);
      return type;
    },
  };
}

function refuseOn(
  schema: GraphQLSchema,
  node: DirectableGraphQLObject,
  coordinate: string,
  what: string,
  name: string,
): void {
  if (onlyDirective(schema, node, coordinate, name) !== undefined)
    throw new LockedDirectiveError(
      coordinate,
      `@${name} on ${what} would lock nothing: put it on the fields whose calls it should lock`,
    );
}

/** The type and what it holds other than output fields, each with its schema coordinate. */
function placesIn(type: GraphQLNamedType): [DirectableGraphQLObject, string, string][] {
  const places: [DirectableGraphQLObject, string, string][] = [[type, type.name, 'a type']];
  if (isObjectType(type) || isInterfaceType(type))
    for (const field of Object.values(type.getFields()))
      for (const arg of field.args)
        places.push([arg, `${type.name}.${field.name}(${arg.name}:)`, 'an argument']);
  if (isInputObjectType(type))
    for (const field of Object.values(type.getFields()))
      places.push([field, `${type.name}.${field.name}`, 'an input field']);
  if (isEnumType(type))
    for (const value of type.getValues()) places.push([value, `${type.name}.${value.name}`, 'an enum value']);
  return places;
}
