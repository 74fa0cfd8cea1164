import { keySegmentText, keyTemplateEscaper } from '@lock/core';
import { KeyTemplateError, RequestKeyError } from './errors.js';

/** Where a placeholder reads its value from. */
export type KeySource = 'params' | 'query' | 'headers' | 'body';

const SOURCES: readonly KeySource[] = ['params', 'query', 'headers', 'body'];
/** Route params and headers are flat: their placeholders name exactly one value. */
const FLAT: ReadonlySet<KeySource> = new Set(['params', 'headers']);
const NAME = /^[A-Za-z0-9_$-]+$/;

/** One `{source.path}` of a template. */
export interface KeyPlaceholder {
  readonly source: KeySource;
  readonly path: readonly string[];
  /** As written between the braces, for messages. */
  readonly text: string;
}

/** A parsed key template: literal text and placeholders, in order. */
export interface KeyTemplate {
  readonly template: string;
  readonly parts: readonly (string | KeyPlaceholder)[];
  /** The sources its placeholders read. */
  readonly sources: ReadonlySet<KeySource>;
  /** Escapes a value so that different values never build the same key (see `keyValueEscaper`). */
  readonly escape: (value: string) => string;
}

/**
 * The values of one request that placeholders read. A param that is an own property of `params`,
 * whatever its value, is one the matched route declares (Express 4 keeps an optional param the
 * request left out as `undefined`): a placeholder finding no value there is the client's 400.
 */
export type KeySources = { readonly [S in KeySource]?: unknown };

/**
 * Parses `'order:{params.id}'`: text with `{source.path}` placeholders, `source` one of
 * params, query, headers, body, and a dotted path below it (one name for params and headers;
 * header names are matched in lower case). Braces only ever delimit placeholders.
 */
export function parseKeyTemplate(template: string): KeyTemplate {
  if (template.length === 0) throw new KeyTemplateError(template, 'it is empty');
  const parts: (string | KeyPlaceholder)[] = [];
  let at = 0;
  while (at < template.length) {
    const open = template.indexOf('{', at);
    const stray = template.indexOf('}', at);
    if (stray !== -1 && (open === -1 || stray < open)) {
      throw new KeyTemplateError(template, `"}" at position ${stray} closes no placeholder`);
    }
    if (open === -1) {
      parts.push(template.slice(at));
      break;
    }
    if (open > at) parts.push(template.slice(at, open));
    const close = template.indexOf('}', open);
    const nested = template.indexOf('{', open + 1);
    if (close === -1 || (nested !== -1 && nested < close)) {
      throw new KeyTemplateError(template, `"{" at position ${open} is not closed`);
    }
    parts.push(placeholder(template, template.slice(open + 1, close)));
    at = close + 1;
  }
  const sources = new Set(parts.flatMap((part) => (typeof part === 'string' ? [] : [part.source])));
  return {
    template,
    parts,
    sources,
    escape: keyTemplateEscaper(parts, (why) => new KeyTemplateError(template, `it ${why}`)),
  };
}

function placeholder(template: string, text: string): KeyPlaceholder {
  const [source, ...path] = text.split('.');
  if (!SOURCES.includes(source as KeySource)) {
    throw new KeyTemplateError(
      template,
      `{${text}} reads from ${JSON.stringify(source)}: expected one of ${SOURCES.join(', ')}`,
    );
  }
  const from = source as KeySource;
  if (path.length === 0)
    throw new KeyTemplateError(template, `{${text}} names no value: write {${from}.<name>}`);
  const bad = path.find((name) => !NAME.test(name));
  if (bad !== undefined) {
    throw new KeyTemplateError(
      template,
      `{${text}} has the name ${JSON.stringify(bad)}: names are letters, digits, "_", "$" and "-"`,
    );
  }
  if (FLAT.has(from) && path.length > 1) {
    throw new KeyTemplateError(template, `{${text}}: ${from} are flat, name one of them`);
  }
  return { source: from, path: from === 'headers' ? path.map((name) => name.toLowerCase()) : path, text };
}

/**
 * The names of the params the route running the middleware declares, for a framework that leaves
 * an optional param the request left out off `params` (Express 5, @koa/router). Called only when
 * a params placeholder finds no own property: never on a request that has its values.
 */
export type DeclaredParams = () => readonly string[];

const NONE_DECLARED: DeclaredParams = () => [];

/**
 * The key for one request, each value escaped. A value that is absent or empty, or is not a
 * single string, number, bigint or boolean, is refused with a `RequestKeyError`: the request is
 * answered without a lock rather than locking `order:undefined`.
 */
export function renderKey(
  template: KeyTemplate,
  sources: KeySources,
  declaredParams: DeclaredParams = NONE_DECLARED,
): string {
  let key = '';
  for (const part of template.parts) {
    key += typeof part === 'string' ? part : template.escape(placeholderValue(part, sources, declaredParams));
  }
  return key;
}

function placeholderValue(
  placeholder: KeyPlaceholder,
  sources: KeySources,
  declaredParams: DeclaredParams,
): string {
  let value: unknown = sources[placeholder.source];
  let found = true;
  for (const name of placeholder.path) {
    // Own properties only: `{query.constructor}` must not find Object.prototype.constructor.
    found = typeof value === 'object' && value !== null && Object.hasOwn(value, name);
    value = found ? (value as Record<string, unknown>)[name] : undefined;
  }
  const text = keySegmentText(value);
  if (typeof text === 'string') return text;
  const isParam = placeholder.source === 'params';
  switch (text.problem) {
    case 'missing':
    case 'empty':
      throw isParam && !found && !declaredParams().includes(placeholder.path[0]!)
        ? new RequestKeyError(
            'ERR_LOCK_HTTP_MISSING_PARAM',
            `the route has no param "${placeholder.path[0]}" for {${placeholder.text}} in the lock key: mount the middleware on a route that declares it`,
          )
        : new RequestKeyError(
            'ERR_LOCK_HTTP_MISSING_VALUE',
            `the request has no value for {${placeholder.text}}, which the lock key needs`,
          );
    case 'lone-surrogate':
      throw new RequestKeyError(
        'ERR_LOCK_HTTP_BAD_VALUE',
        `{${placeholder.text}} must be well-formed Unicode for the lock key, and it holds a lone UTF-16 surrogate`,
      );
    case 'not-finite':
      // Split as for a value that is not a scalar: what sits in a param, the app put there.
      throw new RequestKeyError(
        isParam ? 'ERR_LOCK_HTTP_BAD_KEY' : 'ERR_LOCK_HTTP_BAD_VALUE',
        `{${placeholder.text}} must be a finite number for the lock key, and it is ${value}`,
      );
    case 'not-scalar':
      throw isParam
        ? new RequestKeyError(
            'ERR_LOCK_HTTP_BAD_KEY',
            `{${placeholder.text}} is not a single value (a wildcard param?): use a key function`,
          )
        : new RequestKeyError(
            'ERR_LOCK_HTTP_BAD_VALUE',
            `{${placeholder.text}} must be a single string, number, bigint or boolean for the lock key`,
          );
  }
}
