import type { GraphQLResolveInfo } from 'graphql';
import { selectedFieldNames } from './selection.js';

/** The shape of a field's result that `settle` walks. */
export interface ResultShape {
  /** How many list levels the field's type has (0 for a non-list field). */
  readonly listDepth: number;
  /** Whether the field's type is an object, interface or union (at its innermost list level). */
  readonly composite: boolean;
}

/**
 * Waits until the work a resolver started through its result has settled, so that it runs
 * while the lock is still held: list items (`listDepth` levels deep, async iterables drained
 * into arrays) and, for object results, promise values of the object's own enumerable data
 * properties that the operation selects. Returns the result with each of those promises
 * replaced by its value; a rejected one stays a (handled) rejected promise, so graphql-js
 * reports it at its own path.
 */
export async function settle(value: unknown, shape: ResultShape, info: GraphQLResolveInfo): Promise<unknown> {
  if (!shape.composite) return settleLevel(value, shape.listDepth, identity);
  // Read from the operation only for a result holding a thenable that is not a native promise.
  let selected: ReadonlySet<string> | undefined;
  const isSelected = (name: string) => {
    selected ??= selectedFieldNames(info);
    return selected.has(name);
  };
  return settleLevel(value, shape.listDepth, (object) => settleFields(object, isSelected));
}

async function settleLevel(
  value: unknown,
  depth: number,
  settleItem: (value: unknown) => unknown,
): Promise<unknown> {
  if (depth === 0) return settleItem(value);
  if (typeof value !== 'object' || value === null) return value;
  // graphql-tools' executor (Yoga) iterates an async iterable in place of a list, after the
  // resolver has returned, so its items must be drawn here, under the lock.
  if (!(Symbol.asyncIterator in value || Symbol.iterator in value)) return value;
  const positions = await drawSettling(value as Iterable<unknown> | AsyncIterable<unknown>, (item) =>
    settlePosition(item, (inner) => settleLevel(inner, depth - 1, settleItem)),
  );
  const settled = await Promise.all(positions);
  return settled.map((position) => position.value);
}

/**
 * Starts settling each item as it is drawn: an item may be a promise that rejects while later
 * ones are still being drawn, and would crash the process as unhandled if it waited for the
 * end. When the iterable throws, the items drawn before still settle (under the lock) first.
 */
async function drawSettling<T>(
  iterable: Iterable<unknown> | AsyncIterable<unknown>,
  settleOne: (item: unknown) => Promise<T>,
): Promise<Promise<T>[]> {
  const positions: Promise<T>[] = [];
  try {
    if (Symbol.asyncIterator in iterable) for await (const item of iterable) positions.push(settleOne(item));
    else for (const item of iterable) positions.push(settleOne(item));
  } catch (error) {
    await Promise.all(positions);
    throw error;
  }
  return positions;
}

/**
 * Graphql-js calls function-valued fields and the object type's own resolvers only after the
 * lock is released, so those are not waited for; neither are promises nested deeper. A property
 * no selected field is named after is waited for only when it is a native promise: its work is
 * running already, and must end under the lock. Another thenable there may be lazy (a query
 * builder that runs only when `then` is called), and graphql-js would not call it.
 */
async function settleFields(value: unknown, isSelected: (name: string) => boolean): Promise<unknown> {
  if (typeof value !== 'object' || value === null || isThenable(value)) return value;
  // Descriptors, not values: reading a getter could start work of its own.
  const descriptors = Object.getOwnPropertyDescriptors(value);
  const pending = Object.entries(descriptors).filter(
    ([name, descriptor]) =>
      descriptor.enumerable &&
      isThenable(descriptor.value) &&
      (descriptor.value instanceof Promise || isSelected(name)),
  );
  if (pending.length === 0) return value;
  const settled = new Map<string, unknown>();
  await Promise.all(
    pending.map(async ([name, descriptor]) => {
      settled.set(name, (await settlePosition(descriptor.value, identity)).value);
    }),
  );
  // Not the resolver's object itself: it may be frozen, or shared by code that still expects
  // its promises. A copy with the settled values, of the same prototype (for `instanceof`); an
  // instance of a class is seen through a proxy over that copy, since the copy lacks its private
  // fields (`#x`), which its getters and methods read.
  for (const [name, result] of settled) descriptors[name] = { ...descriptors[name], value: result };
  const prototype = Object.getPrototypeOf(value);
  const copy = Object.create(prototype, descriptors) as object;
  return prototype === Object.prototype || prototype === null ? copy : settledView(value, copy);
}

type Method = (...args: never) => unknown;

/**
 * The instance as child resolvers should see it: the copy's own properties (for `Object.keys`,
 * spread, `JSON.stringify`, `Object.hasOwn`, writes and `Object.freeze`, as on a plain object)
 * and the class's getters, setters and methods run on the instance.
 */
function settledView(instance: object, copy: object): object {
  const bound = new WeakMap<Method, Method>();
  return new Proxy(copy, {
    get(target, name) {
      const own = Reflect.getOwnPropertyDescriptor(target, name);
      // A proxy must answer a frozen data property of its target with that very value, or reading
      // it throws a TypeError: an own function field of a frozen instance (an arrow function,
      // which needs no `this`) is answered unbound.
      if (own && 'value' in own && !own.configurable && !own.writable) return own.value;
      // Getters, the class's and any own one copied, read the instance (its private fields).
      const found: unknown = own && 'value' in own ? own.value : Reflect.get(instance, name);
      // graphql-js calls a method field on the object it was given: bound, so that `this` is the
      // instance. Once per method, so that it reads the same each time; the constructor unbound,
      // as `__resolveType` may compare it or read its name.
      if (typeof found !== 'function' || name === 'constructor') return found;
      let method = bound.get(found as Method);
      if (!method) {
        method = found.bind(instance) as Method;
        bound.set(found as Method, method);
      }
      return method;
    },
    // A class's setter runs on the instance too; any other write lands on the copy, as it would
    // on the instance.
    set: (target, name, value) =>
      Object.hasOwn(target, name) || !(name in target)
        ? Reflect.set(target, name, value)
        : Reflect.set(instance, name, value),
  });
}

/**
 * Boxed, because an async function cannot return a rejected promise as its value. Calling
 * `then` once, here, also keeps lazy thenables (query builders) from running a second time.
 */
async function settlePosition(
  value: unknown,
  next: (value: unknown) => unknown,
): Promise<{ value: unknown }> {
  const outcome = Promise.resolve(value).then(next);
  try {
    return { value: await outcome };
  } catch {
    return { value: outcome };
  }
}

function identity(value: unknown): unknown {
  return value;
}

function isThenable(value: unknown): boolean {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}
