import { InvalidOptionError, refuseUnknown } from '@lock/core';
import { defaultFieldResolver, type GraphQLError, specifiedDirectives } from 'graphql';
import type { HttpStatusOptions, KeyFunction, LockedDirectiveOptions, Settings } from './options.js';

const KNOWN: readonly (keyof LockedDirectiveOptions)[] = [
  'locker',
  'name',
  'ttl',
  'wait',
  'keys',
  'onLocked',
  'httpStatus',
  'signal',
  'fieldResolver',
];
const GRAPHQL_NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;
const BUILT_IN = specifiedDirectives.map((directive) => directive.name);
const DEFAULT_HTTP: Required<HttpStatusOptions> = { locked: 409, unavailable: 503 };

/** Validates the factory options and fills in the defaults; throws `InvalidOptionError` naming the bad value. */
export function checkOptions(options: LockedDirectiveOptions): Settings {
  if (typeof options !== 'object' || options === null)
    throw new InvalidOptionError('options', options, 'an object with a locker');
  refuseUnknown(options, KNOWN, 'the lockedDirective() options');
  const { locker, name = 'locked', ttl, wait, keys = {} } = options;
  // The two methods the directive calls: `checkOptions` now, `using` on every field call.
  if (typeof locker?.using !== 'function' || typeof locker.checkOptions !== 'function')
    throw new InvalidOptionError('locker', locker, 'a Locker from @lock/core (or any package built on it)');
  if (typeof name !== 'string' || !GRAPHQL_NAME.test(name))
    throw new InvalidOptionError('name', name, 'a GraphQL name');
  // GraphQL reserves them for introspection: a schema declaring @__locked fails every operation.
  if (name.startsWith('__'))
    throw new InvalidOptionError(
      'name',
      name,
      'a GraphQL name not starting with "__", which GraphQL reserves',
    );
  // The schema would declare its own @include (or @skip…), which breaks every query using it.
  if (BUILT_IN.includes(name))
    throw new InvalidOptionError('name', name, `a name other than GraphQL's own ${BUILT_IN.join(', ')}`);
  // The locker's own check: a format in whole seconds (a PHP fleet's) refuses more than core's rule.
  locker.checkOptions({ ttl, wait });
  return {
    locker,
    name,
    ttl,
    wait,
    keys: checkKeys(keys),
    onLocked: functionOr('onLocked', options.onLocked, rethrow),
    http: checkHttp(options.httpStatus),
    signal: functionOr('signal', options.signal, requestSignal),
    fieldResolver: functionOr('fieldResolver', options.fieldResolver, defaultFieldResolver),
  };
}

/**
 * A list (`keys: ['order:{args.id}']`, the option taken for a list of lock keys) or a Map is
 * refused: it would pass as an object of no key functions. Any other object is read by its own
 * enumerable properties, each of which must be a function (an object literal, a module
 * namespace, a class instance with its functions as fields); the templates see a frozen copy of
 * those, so a template naming anything else is refused when the schema is transformed.
 */
function checkKeys(keys: unknown): Readonly<Record<string, KeyFunction>> {
  if (!isNamedObject(keys))
    throw new InvalidOptionError(
      'keys',
      keys,
      "an object of key functions by name, such as { cartOf: (args, context, info) => … }, not a list or a Map (the lock key is the directive's key template)",
    );
  const checked: Record<string, KeyFunction> = Object.create(null);
  for (const [name, fn] of Object.entries(keys)) {
    if (!GRAPHQL_NAME.test(name))
      throw new InvalidOptionError('keys', name, 'names made of letters, digits and _');
    if (typeof fn !== 'function') throw new InvalidOptionError(`keys.${name}`, fn, 'a function');
    checked[name] = fn as KeyFunction;
  }
  return Object.freeze(checked);
}

/** An object holding values by property name: not an array or a keyed collection (Map, Set). */
function isNamedObject(value: unknown): value is object {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    !(value instanceof Map) &&
    !(value instanceof Set) &&
    !(value instanceof WeakMap) &&
    !(value instanceof WeakSet)
  );
}

function checkHttp(value: unknown): Required<HttpStatusOptions> | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return DEFAULT_HTTP;
  if (!isNamedObject(value))
    throw new InvalidOptionError('httpStatus', value, 'a boolean or { locked, unavailable }');
  refuseUnknown(value, Object.keys(DEFAULT_HTTP), 'the httpStatus options', {}, 'httpStatus');
  const statuses = { ...DEFAULT_HTTP, ...definedOnly(value) };
  for (const [name, status] of Object.entries(statuses)) {
    if (!Number.isInteger(status) || status < 400 || status > 599)
      throw new InvalidOptionError(`httpStatus.${name}`, status, 'an HTTP error status from 400 to 599');
  }
  return statuses;
}

/** An entry set to `undefined` counts as not given, as in core's options. */
function definedOnly(value: object): HttpStatusOptions {
  return Object.fromEntries(Object.entries(value).filter(([, entry]) => entry !== undefined));
}

function functionOr<F>(name: string, value: F | undefined, fallback: F): F {
  if (value === undefined) return fallback;
  if (typeof value !== 'function') throw new InvalidOptionError(name, value, 'a function');
  return value;
}

function rethrow(error: GraphQLError): never {
  throw error;
}

/**
 * Yoga puts the Fetch `Request` (whose signal aborts when the client goes away) on the context;
 * Apollo has none, so the app may put one at `context.signal`. Each is a guess at what the
 * context holds, so a value there that is not an AbortSignal (another framework's `request`)
 * is passed over, not refused: the next one is tried.
 */
function requestSignal(context: unknown): AbortSignal | undefined {
  const holder = context as { request?: { signal?: unknown }; signal?: unknown } | null | undefined;
  return [holder?.request?.signal, holder?.signal].find(
    (candidate): candidate is AbortSignal => candidate instanceof AbortSignal,
  );
}
