import { RequestKeyError } from './errors.js';
import { type HttpFramework, routeWith } from './framework.js';
import { type DeclaredParams, type KeySources, type KeyTemplate, renderKey } from './key-template.js';
import type { LockSettings } from './options.js';
import type { WarnOnce } from './warnings.js';

/**
 * The `RequestKeyError` for a key the locker refused (`InvalidKeyError`, such as a key longer
 * than 4096 bytes): it names the template's placeholders, the values the client controls, and
 * the locker's reason, never the key itself (kilobytes of client input) nor the template: a 400's
 * message may reach the client, as the messages of missing values do.
 */
export function refusedKeyError<C>(key: LockSettings<C>['key'], error: unknown): RequestKeyError {
  const given = (error as { reason?: unknown } | null)?.reason;
  const reason = typeof given === 'string' ? given : 'too long, or unusable on this topology';
  if (typeof key === 'function') {
    return new RequestKeyError(
      'ERR_LOCK_HTTP_BAD_KEY',
      `the lock key the key function made from this request is refused by the locker: ${reason}`,
      { cause: error },
    );
  }
  const values = key.parts.flatMap((part) => (typeof part === 'string' ? [] : [`{${part.text}}`]));
  const from = values.length > 0 ? `this request's ${values.join(', ')}` : 'its template alone';
  return new RequestKeyError(
    'ERR_LOCK_HTTP_BAD_VALUE',
    `the lock key made from ${from} is refused by the locker: ${reason}`,
    { cause: error },
  );
}

/** Turns a request into its lock key, or throws `RequestKeyError`. */
export type KeyOf<C> = (context: C) => Promise<string>;

/**
 * The key resolver of one middleware: its template rendered over `sourcesOf(context)`, or its key
 * function. `declaredParamsOf` is asked only for a params placeholder that finds no value;
 * `framework` shapes the route the warnings show.
 */
export function keyOf<C>(
  settings: LockSettings<C>,
  sourcesOf: (context: C) => KeySources,
  declaredParamsOf: (context: C) => readonly string[],
  warnings: WarnOnce,
  framework: HttpFramework,
): KeyOf<C> {
  const { key } = settings;
  if (typeof key === 'function') {
    return async (context) => {
      const value = await key(context);
      if (typeof value !== 'string' || value.length === 0) {
        throw new RequestKeyError(
          'ERR_LOCK_HTTP_BAD_KEY',
          `the key function returned ${typeof value === 'string' ? 'an empty string' : typeof value}, not a non-empty string`,
        );
      }
      return value;
    };
  }
  return async (context) => {
    const sources = sourcesOf(context);
    const declaredParams = () => declaredParamsOf(context);
    checkSources(key, sources, declaredParams, settings.validate, warnings, framework);
    return renderKey(key, sources, declaredParams);
  };
}

function checkSources(
  template: KeyTemplate,
  sources: KeySources,
  declaredParams: DeclaredParams,
  validate: LockSettings<unknown>['validate'],
  warnings: WarnOnce,
  framework: HttpFramework,
): void {
  if (
    validate.params &&
    template.sources.has('params') &&
    !hasEntries(sources.params) &&
    declaredParams().length === 0
  ) {
    warnings.warn(
      'ERR_LOCK_HTTP_NO_PARAMS',
      `the lock key ${JSON.stringify(template.template)} reads route params, but the request has none: the middleware is mounted where routes are not matched yet (app.use / router.use). Pass it to the route itself: ${routeWith(framework, 'lock(...)')}`,
    );
  }
  if (validate.body && template.sources.has('body') && sources.body === undefined) {
    warnings.warn(
      'ERR_LOCK_HTTP_NO_BODY',
      `the lock key ${JSON.stringify(template.template)} reads the body, but the request has none: put a body parser before the lock middleware`,
    );
  }
}

function hasEntries(value: unknown): boolean {
  return typeof value === 'object' && value !== null && Object.keys(value).length > 0;
}
