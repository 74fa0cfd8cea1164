import type { GraphQLFieldConfig } from 'graphql';

/**
 * Which `lockedDirective()` call locked a field. Told by `factory`, a plain string, not by the
 * object's identity: `mergeSchemas`, `mergeDeep` and any deep clone of extensions copy the mark
 * into a new object.
 */
export interface AppliedMark {
  /** The directive's name. */
  readonly directive: string;
  /** The id of the `lockedDirective()` call, unique to it. */
  readonly factory: string;
}

/**
 * The field extension holding the mark of the directive `name`: one per name, since directives
 * of other names lock the same field independently. A string key, not a symbol: graphql-js
 * copies extensions with `Object.entries` when it builds a field, which drops symbols.
 */
function markKey(name: string): string {
  return `@lock/graphql:${name}`;
}

/**
 * The mark the directive `name` left on the field, if any. Read from the field, not from its
 * resolver: another transform run between two of ours wraps the resolver, but keeps the
 * field's extensions.
 */
export function appliedMark(config: GraphQLFieldConfig<unknown, unknown>, name: string): unknown {
  return config.extensions?.[markKey(name)];
}

/** Whether `applied` (from `appliedMark`) is the mark of the `lockedDirective()` call `factory`. */
export function isMarkOf(applied: unknown, factory: string): boolean {
  return typeof applied === 'object' && applied !== null && (applied as AppliedMark).factory === factory;
}

/** The field's config with the mark added. */
export function withMark(
  config: GraphQLFieldConfig<unknown, unknown>,
  mark: AppliedMark,
): GraphQLFieldConfig<unknown, unknown> {
  return { ...config, extensions: { ...config.extensions, [markKey(mark.directive)]: mark } };
}
