import { type AcquireOptions, InvalidOptionError, type Locker, orDefault, refuseUnknown } from '@lock/core';
import { type KeyTemplate, parseKeyTemplate } from './key-template.js';
import { DEFAULT_BUSY_MESSAGE } from './refusal.js';

/** Where warnings go; `console` fits. */
export interface LockLogger {
  warn(message: unknown, ...rest: unknown[]): void;
  error(message: unknown, ...rest: unknown[]): void;
}

/** The request-time checks that log a warning once (`validate`). */
export type ValidationName =
  /** The template reads route params but the request has none (mounted with `app.use` / `router.use`). */
  | 'params'
  /** The template reads the body but there is none (no body parser ran before the middleware). */
  | 'body';

const VALIDATIONS: readonly ValidationName[] = ['params', 'body'];

/** The options both adapters share; `C` is what a key function or `skip` gets (Express `req`, Koa `ctx`). */
export interface CommonLockOptions<C> {
  /** Any `Locker` (token, legacy, RedLock, Redisson or ThinkPHP format). Required. */
  readonly locker: Locker;
  /**
   * The lock key: a template such as `'order:{params.id}'` reading `params`, `query`, `headers`
   * or `body` (dotted paths below `query` and `body`), parsed when the middleware is made; or a
   * function of the request returning the key. Required.
   */
  readonly key: string | ((context: C) => string | Promise<string>);
  /** Lease in ms, fixed (not renewed unless `renew: true`). Default: the locker's (30 000 ms, renewed). */
  readonly ttl?: number;
  /** How long a request waits for a busy lock, in ms; `0` answers busy at once. Default: the locker's (10 000). */
  readonly wait?: number;
  /** Renew the lease every ttl/3 while the response lasts. Default: `true` without `ttl`, `false` with one. */
  readonly renew?: boolean;
  /** Status of the busy answer: 409, 423 or 503. Default: `409`. */
  readonly statusCode?: 409 | 423 | 503;
  /** The `detail` of the busy answer's problem+json body. Default: `'Another request is working on this resource. Retry after the time given in Retry-After.'`. */
  readonly message?: string;
  /** Requests for which it returns true run without a lock. Default: none skipped. */
  readonly skip?: (context: C) => boolean | Promise<boolean>;
  /**
   * When Redis is unreachable: `false` answers 503 with `Retry-After`; `true` runs the handler
   * without a lock (the handle is then undefined) and logs a warning once per outage. Default: `false`.
   */
  readonly failOpen?: boolean;
  /**
   * Receives warnings (`warn`), lost locks and failed releases (`error`); what it throws, or
   * an async one rejects with, is dropped. Default: `console`.
   */
  readonly logger?: LockLogger;
  /** Request-time misuse checks, each logged once: `false` turns all off, `{ body: false }` one. Default: `true`. */
  readonly validate?: boolean | { readonly [V in ValidationName]?: boolean };
}

/** The checked options. */
export interface LockSettings<C> {
  readonly locker: Locker;
  readonly key: KeyTemplate | ((context: C) => string | Promise<string>);
  readonly acquire: Pick<AcquireOptions, 'ttl' | 'wait' | 'renew'>;
  readonly statusCode: 409 | 423 | 503;
  readonly message: string;
  readonly skip: ((context: C) => boolean | Promise<boolean>) | undefined;
  readonly failOpen: boolean;
  readonly logger: LockLogger;
  readonly validate: { readonly [V in ValidationName]: boolean };
}

const COMMON = [
  'locker',
  'key',
  'ttl',
  'wait',
  'renew',
  'statusCode',
  'message',
  'skip',
  'failOpen',
  'logger',
  'validate',
];

/**
 * Checks the shared options (and that no name outside them and `extra` is given), throwing
 * `InvalidOptionError` or `KeyTemplateError` naming the bad value: configuration errors
 * surface when the middleware is made, not on the first request. `where` names the options
 * in the refusal of an unknown one.
 */
export function checkCommonOptions<C>(
  options: unknown,
  extra: readonly string[],
  where = 'the lock() options',
): LockSettings<C> {
  refuseUnknown(options, [...COMMON, ...extra], where);
  const given = options as CommonLockOptions<C>;
  if (
    typeof given.locker !== 'object' ||
    given.locker === null ||
    typeof given.locker.acquire !== 'function' ||
    typeof given.locker.using !== 'function' ||
    typeof given.locker.checkOptions !== 'function'
  ) {
    throw new InvalidOptionError(
      'locker',
      given.locker,
      'a Locker from @lock/core (or any package built on it)',
    );
  }
  const acquire: Pick<AcquireOptions, 'ttl' | 'wait' | 'renew'> = {
    ...(given.ttl !== undefined && { ttl: given.ttl }),
    ...(given.wait !== undefined && { wait: given.wait }),
    ...(given.renew !== undefined && { renew: given.renew }),
  };
  // Checked by the locker's own rules: a format in whole seconds (a PHP fleet's) refuses more than core's.
  given.locker.checkOptions(acquire);
  return {
    locker: given.locker,
    key: checkKey(given.key),
    acquire,
    statusCode: checkStatus(orDefault(given.statusCode, 409)),
    message: checkMessage(orDefault(given.message, DEFAULT_BUSY_MESSAGE)),
    skip: given.skip === undefined ? undefined : checkFunction(given.skip, 'skip'),
    failOpen: checkBoolean(orDefault(given.failOpen, false), 'failOpen'),
    logger: checkLogger(orDefault(given.logger, console)),
    validate: checkValidate(orDefault(given.validate, true)),
  };
}

/** Checks an option that must be a function, naming it when it is not. */
export function checkFunction<F>(value: F, name: string): F {
  if (typeof value !== 'function') throw new InvalidOptionError(name, value, 'a function');
  return value;
}

/** Names no handle may be stored under: they reach or replace an object's prototype. */
const PROTOTYPE_NAMES: readonly string[] = ['__proto__', 'constructor', 'prototype'];

/**
 * Checks an option that names a property the handle is stored under: a non-empty string, not
 * `__proto__`, `constructor` or `prototype`, and none of the names `taken` says the target
 * object already uses (`req.params`, `req.socket`, … for Express).
 */
export function checkPropertyName(
  value: unknown,
  name: string,
  taken: (property: string) => boolean = () => false,
): string {
  if (typeof value !== 'string' || value.length === 0)
    throw new InvalidOptionError(name, value, 'a non-empty string');
  if (PROTOTYPE_NAMES.includes(value)) {
    throw new InvalidOptionError(
      name,
      value,
      `a property name other than ${PROTOTYPE_NAMES.join(', ')}, such as 'lock'`,
    );
  }
  if (taken(value)) {
    throw new InvalidOptionError(
      name,
      value,
      "a property name the request does not already use, such as 'lock'",
    );
  }
  return value;
}

function checkKey<C>(key: CommonLockOptions<C>['key']): LockSettings<C>['key'] {
  if (typeof key === 'string') return parseKeyTemplate(key);
  if (typeof key === 'function') return key;
  throw new InvalidOptionError(
    'key',
    key,
    "a template such as 'order:{params.id}' or a function of the request",
  );
}

function checkBoolean(value: unknown, name: string): boolean {
  if (typeof value !== 'boolean') throw new InvalidOptionError(name, value, 'a boolean');
  return value;
}

function checkStatus(value: unknown): 409 | 423 | 503 {
  if (value !== 409 && value !== 423 && value !== 503) {
    throw new InvalidOptionError('statusCode', value, '409, 423 or 503');
  }
  return value;
}

function checkMessage(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new InvalidOptionError('message', value, 'a non-empty string');
  }
  return value;
}

function checkLogger(value: unknown): LockLogger {
  const logger = value as Partial<LockLogger> | null;
  if (
    typeof logger !== 'object' ||
    logger === null ||
    typeof logger.warn !== 'function' ||
    typeof logger.error !== 'function'
  ) {
    throw new InvalidOptionError('logger', value, 'an object with warn() and error(), such as console');
  }
  return logger as LockLogger;
}

function checkValidate(value: unknown): LockSettings<unknown>['validate'] {
  if (typeof value === 'boolean') return { params: value, body: value };
  if (typeof value !== 'object' || value === null) {
    throw new InvalidOptionError(
      'validate',
      value,
      `a boolean or an object of booleans named ${VALIDATIONS.join(', ')}`,
    );
  }
  refuseUnknown(value, VALIDATIONS, 'the validate options', {}, 'validate');
  const checks = { params: true, body: true };
  for (const [name, enabled] of Object.entries(value)) {
    // Left undefined, a validation keeps its default, as every other option does.
    if (enabled === undefined) continue;
    if (typeof enabled !== 'boolean') throw new InvalidOptionError(`validate.${name}`, enabled, 'a boolean');
    checks[name as ValidationName] = enabled;
  }
  return checks;
}
