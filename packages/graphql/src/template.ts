import { isWellFormedValue, keySegmentText, keyTemplateEscaper } from '@lock/core';
import {
  type GraphQLFieldConfigArgumentMap,
  type GraphQLInputType,
  type GraphQLLeafType,
  type GraphQLResolveInfo,
  getNullableType,
  isInputObjectType,
  isLeafType,
  isListType,
} from 'graphql';
import { LockedDirectiveError } from './directive-error.js';
import { badInput } from './field-errors.js';
import type { KeyFunction } from './options.js';

/** A key template parsed once, when the schema is transformed. */
export interface KeyTemplate {
  /**
   * Builds the key of one call; throws a `BAD_USER_INPUT` GraphQLError when a segment is null,
   * missing or empty, and a plain Error (a server error) when the context or a key function gave
   * a value no key can be made of.
   */
  build(args: Record<string, unknown>, context: unknown, info: GraphQLResolveInfo): string;
}

/** The field a template belongs to, as the transformer sees it. */
export interface TemplateField {
  /** `Type.field`. */
  readonly coordinate: string;
  readonly args: GraphQLFieldConfigArgumentMap | undefined;
}

type Part = string | Segment;

interface Segment {
  /** As written, e.g. `args.input.orderId`. */
  readonly text: string;
  /**
   * Whether the server supplies the value (the context, a key function) rather than the
   * client's input: a value no key can be made of is then the server's mistake, not the client's.
   */
  readonly server: boolean;
  read(args: Record<string, unknown>, context: unknown, info: GraphQLResolveInfo): unknown;
  /**
   * For an argument: its leaf type's `serialize`, applied to a value that is not already a
   * string, number, bigint or boolean (a custom scalar parsed to an object, such as a `Date`).
   */
  readonly serialize?: (value: unknown) => unknown;
}

// `{{` and `}}` are literal braces, `{…}` a segment, a lone brace a mistake.
const TOKEN = /\{\{|\}\}|\{([^{}]*)\}|[{}]/g;
const SEGMENT = /^(args|context|keys)((?:\.[_A-Za-z][_0-9A-Za-z]*)+)$/;

/**
 * Parses `order:{args.id}`-style templates: `{args.a.b}` reads an argument (and fields of input
 * objects), `{context.a.b}` the GraphQL context, `{keys.name}` calls a key function. Throws
 * `LockedDirectiveError` naming the field for anything that could never make a key.
 */
export function parseTemplate(
  template: string,
  field: TemplateField,
  keys: Readonly<Record<string, KeyFunction>>,
  directive: string,
): KeyTemplate {
  const refuse = (why: string) =>
    new LockedDirectiveError(field.coordinate, `${directive}(key: ${JSON.stringify(template)}) ${why}`);
  // Possible in a code-first string, not in SDL; every call would answer BAD_USER_INPUT.
  if (!isWellFormedValue(template))
    throw refuse(
      'holds a lone UTF-16 surrogate, which Redis would receive as U+FFFD: the locker refuses every key holding one',
    );
  const parts: Part[] = [];
  let literal = '';
  let from = 0;
  for (const match of template.matchAll(TOKEN)) {
    literal += template.slice(from, match.index);
    from = match.index + match[0].length;
    if (match[0] === '{{' || match[0] === '}}') {
      literal += match[0][0];
      continue;
    }
    if (match[1] === undefined)
      throw refuse(`has a lone "${match[0]}" (write "${match[0]}${match[0]}" for a literal brace)`);
    if (literal) parts.push(literal);
    literal = '';
    parts.push(parseSegment(match[1], field, keys, refuse));
  }
  literal += template.slice(from);
  if (literal) parts.push(literal);
  if (parts.length === 0) throw refuse('is empty');
  const escapeValue = keyTemplateEscaper(parts, refuse);
  return {
    build(args, context, info) {
      let key = '';
      for (const part of parts)
        key += typeof part === 'string' ? part : escapeValue(segmentValue(part, args, context, info));
      return key;
    },
  };
}

function parseSegment(
  text: string,
  field: TemplateField,
  keys: Readonly<Record<string, KeyFunction>>,
  refuse: (why: string) => Error,
): Segment {
  const match = SEGMENT.exec(text);
  if (!match) throw refuse(`has a segment {${text}}: expected {args.name}, {context.name} or {keys.name}`);
  const [, source, dotted] = match as unknown as [string, 'args' | 'context' | 'keys', string];
  const path = dotted.slice(1).split('.');
  // Prototypes too: a context may be a class instance whose values are getters.
  if (source === 'context')
    return { text, server: true, read: (_args, context) => walk(context, path, Reflect.get) };
  if (source === 'keys') {
    const [name] = path as [string];
    // Own properties only: `{keys.toString}` must not find Object.prototype's.
    const fn = Object.hasOwn(keys, name) ? keys[name] : undefined;
    if (path.length !== 1 || fn === undefined) {
      const known = Object.keys(keys);
      throw refuse(
        `names {${text}}, but the keys option has no function "${path.join('.')}" (it has: ${known.join(', ') || 'none'})`,
      );
    }
    return { text, server: true, read: (args, context, info) => fn(args, context, info) };
  }
  const leaf = checkArgumentPath(path, field, refuse);
  return {
    text,
    server: false,
    // Own properties only: graphql-js builds arguments and input objects as plain objects, so a
    // left-out `constructor` or `toString` would otherwise be read from Object.prototype.
    read: (args) => walk(args, path, ownValue),
    serialize: (value) => leaf.serialize(value),
  };
}

/** The path must name an argument, then fields of input objects, and end at a scalar or enum: answers that type. */
function checkArgumentPath(
  path: readonly string[],
  field: TemplateField,
  refuse: (why: string) => Error,
): GraphQLLeafType {
  const [name, ...rest] = path as [string, ...string[]];
  const argument = field.args?.[name];
  if (argument === undefined) {
    const known = Object.keys(field.args ?? {});
    throw refuse(
      `names args.${name}, but ${field.coordinate} has no argument "${name}" (it has: ${known.join(', ') || 'none'})`,
    );
  }
  let type: GraphQLInputType = getNullableType(argument.type);
  let walked = `args.${name}`;
  for (const step of rest) {
    if (!isInputObjectType(type))
      throw refuse(`names ${walked}.${step}, but ${walked} is ${type}, not an input object`);
    const inner = type.getFields()[step];
    if (inner === undefined)
      throw refuse(`names ${walked}.${step}, but input ${type.name} has no field "${step}"`);
    type = getNullableType(inner.type);
    walked += `.${step}`;
  }
  if (isListType(type) || !isLeafType(type))
    throw refuse(`names ${walked}, which is ${type}: a key segment must be a scalar or an enum`);
  return type;
}

function walk(
  root: unknown,
  path: readonly string[],
  read: (object: object, name: string) => unknown,
): unknown {
  let value = root;
  for (const step of path) {
    if (!isObject(value)) return undefined;
    value = read(value as object, step);
  }
  return value;
}

function ownValue(object: object, name: string): unknown {
  return Object.hasOwn(object, name) ? (object as Record<string, unknown>)[name] : undefined;
}

function segmentValue(
  segment: Segment,
  args: Record<string, unknown>,
  context: unknown,
  info: GraphQLResolveInfo,
): string {
  const read = segment.read(args, context, info);
  const value = segment.serialize && isObject(read) ? segment.serialize(read) : read;
  const coordinate = `${info.parentType.name}.${info.fieldName}`;
  if (isThenable(value)) {
    // Never awaited: a rejection of it would otherwise crash the process as unhandled.
    value.then(undefined, () => {});
    throw new Error(
      `${coordinate}: {${segment.text}} gave a promise; a key segment must be known synchronously (resolve it in the context first)`,
    );
  }
  const text = keySegmentText(value);
  if (typeof text === 'string') return text;
  switch (text.problem) {
    case 'missing':
      throw badInput(`${coordinate} needs {${segment.text}} for its lock key, and it is ${value}`);
    case 'empty':
      throw badInput(`${coordinate} needs {${segment.text}} for its lock key, and it is an empty string`);
    case 'lone-surrogate':
      throw badInput(
        `${coordinate} needs {${segment.text}} for its lock key to be well-formed Unicode, and it holds a lone UTF-16 surrogate`,
      );
    case 'not-finite':
      if (segment.server)
        throw new Error(`${coordinate}: {${segment.text}} gave ${value}; a number in a key must be finite`);
      throw badInput(
        `${coordinate} needs {${segment.text}} for its lock key to be a finite number, and it is ${value}`,
      );
    case 'not-scalar':
      if (segment.server)
        throw new Error(
          `${coordinate}: {${segment.text}} gave ${withArticle(typeof value)}; a key segment must be a string, number, bigint or boolean`,
        );
      throw badInput(
        `${coordinate} needs {${segment.text}} for its lock key to be a scalar, and it is ${typeof value}`,
      );
  }
}

function withArticle(noun: string): string {
  return `${/^[aeiou]/.test(noun) ? 'an' : 'a'} ${noun}`;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return isObject(value) && typeof (value as { then?: unknown }).then === 'function';
}

function isObject(value: unknown): boolean {
  return (typeof value === 'object' && value !== null) || typeof value === 'function';
}
