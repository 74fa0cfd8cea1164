import { RequestKeyError } from './errors.js';
import { type KeySources, type KeyTemplate, renderKey } from './key-template.js';
import type { LockSettings } from './options.js';
import type { WarnOnce } from './warnings.js';

/** Turns a request into its lock key, or throws `RequestKeyError`. */
export type KeyOf<C> = (context: C) => Promise<string>;

/** The key resolver of one middleware: its template rendered over `sourcesOf(context)`, or its key function. */
export function keyOf<C>(
  settings: LockSettings<C>,
  sourcesOf: (context: C) => KeySources,
  warnings: WarnOnce,
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
    checkSources(key, sources, settings.validate, warnings);
    return renderKey(key, sources);
  };
}

function checkSources(
  template: KeyTemplate,
  sources: KeySources,
  validate: LockSettings<unknown>['validate'],
  warnings: WarnOnce,
): void {
  if (validate.params && template.sources.has('params') && !hasEntries(sources.params)) {
    warnings.warn(
      'ERR_LOCK_HTTP_NO_PARAMS',
      `the lock key ${JSON.stringify(template.template)} reads route params, but the request has none: the middleware is mounted where routes are not matched yet (app.use / router.use). Pass it to the route itself: app.post('/orders/:id', lock(...), handler)`,
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
