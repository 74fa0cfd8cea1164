import { createLocker, legacyProtocol, RETRY_AFTER_UNKNOWN, retryAfterSeconds } from '@lock/core';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { checkCommonOptions } from '../src/http/index.js';
import { parseKeyTemplate, renderKey } from '../src/http/key-template.js';

const notUsed = () => Promise.reject(new Error('not used'));
// Checking options sends nothing: a client that never connects will do.
const redis = new Redis({ lazyConnect: true });
const locker = createLocker({ redis });
afterAll(() => redis.disconnect());

describe('key templates', () => {
  it('renders params, dotted query and body paths, and headers by lower-case name', () => {
    const template = parseKeyTemplate('{headers.X-Tenant}/order:{params.id}:{query.page.n}:{body.item.sku}');
    const key = renderKey(template, {
      params: { id: '42' },
      query: { page: { n: 3 } },
      headers: { 'x-tenant': 'acme' },
      body: { item: { sku: 10n } },
    });
    expect(key).toBe('acme/order:42:3:10');
    expect([...template.sources].sort()).toEqual(['body', 'headers', 'params', 'query']);
    expect(renderKey(parseKeyTemplate('reports'), {})).toBe('reports');
  });

  it('escapes values so that different values never build one key', () => {
    const colons = parseKeyTemplate('cart:{params.user}:{params.sku}');
    expect(renderKey(colons, { params: { user: 'a:b', sku: 'c' } })).toBe('cart:a\\:b:c');
    expect(renderKey(colons, { params: { user: 'a', sku: 'b:c' } })).toBe('cart:a:b\\:c');
    const slashes = parseKeyTemplate('cart/{params.user}/{params.sku}.json');
    expect(renderKey(slashes, { params: { user: 'a/b', sku: 'c' } })).toBe('cart/a\\/b/c.json');
    expect(renderKey(slashes, { params: { user: 'a', sku: 'b/c' } })).toBe('cart/a/b\\/c.json');
    // Only the separator between two values and the always-escaped characters change.
    expect(renderKey(slashes, { params: { user: 'x.y-z', sku: '{1}\\' } })).toBe(
      'cart/x.y-z/\\{1\\}\\\\.json',
    );
  });

  it.each([
    ['', 'it is empty'],
    ['order:{params.id', '"{" at position 6 is not closed'],
    ['order:{params.{id}}', '"{" at position 6 is not closed'],
    ['order:}{params.id}', '"}" at position 6 closes no placeholder'],
    ['order:{cookies.id}', '{cookies.id} reads from "cookies": expected one of params, query, headers, body'],
    ['order:{params}', '{params} names no value: write {params.<name>}'],
    ['order:{query.a..b}', '{query.a..b} has the name ""'],
    ['order:{query.a b}', '{query.a b} has the name "a b"'],
    ['order:{params.a.b}', '{params.a.b}: params are flat, name one of them'],
    [
      'order:{params.a}{params.b}',
      'it has {params.a}{params.b} side by side: put a separator between them, or their values could not be told apart',
    ],
    ['order:{headers.a.b}', '{headers.a.b}: headers are flat, name one of them'],
    [
      'order:{params.a}\\{params.b}',
      'it has a backslash right after {params.a}: its values could not be told apart',
    ],
  ])('refuses %j with a KeyTemplateError naming why', (template, why) => {
    expect(() => parseKeyTemplate(template)).toThrow(
      expect.objectContaining({
        name: 'KeyTemplateError',
        code: 'ERR_LOCK_HTTP_KEY_TEMPLATE',
        template,
        message: expect.stringContaining(why),
      }),
    );
  });

  it('refuses a template whose text alone makes every key longer than a locker takes', () => {
    // A value is at least one byte: 4094 + ":" + 1 is the longest key the locker takes.
    expect(parseKeyTemplate(`${'k'.repeat(4_094)}:{params.id}`).parts).toHaveLength(2);
    expect(() => parseKeyTemplate(`${'k'.repeat(4_095)}:{params.id}`)).toThrow(
      expect.objectContaining({
        name: 'KeyTemplateError',
        message: expect.stringContaining(
          'it makes keys longer than the 4096 bytes a locker takes by its text alone',
        ),
      }),
    );
  });

  it.each([
    [{ query: {} }, 'ERR_LOCK_HTTP_MISSING_VALUE', 400],
    [{ query: { id: '' } }, 'ERR_LOCK_HTTP_MISSING_VALUE', 400],
    [{ query: { id: null } }, 'ERR_LOCK_HTTP_MISSING_VALUE', 400],
    [{ query: { id: ['1', '2'] } }, 'ERR_LOCK_HTTP_BAD_VALUE', 400],
    [{ query: { id: { nested: 1 } } }, 'ERR_LOCK_HTTP_BAD_VALUE', 400],
    [{ query: { id: Number.NaN } }, 'ERR_LOCK_HTTP_BAD_VALUE', 400],
    [{}, 'ERR_LOCK_HTTP_MISSING_VALUE', 400],
  ])('refuses the query %j with %s (%i)', (sources, code, status) => {
    expect(() => renderKey(parseKeyTemplate('order:{query.id}'), sources)).toThrow(
      expect.objectContaining({ name: 'RequestKeyError', code, status, statusCode: status, expose: true }),
    );
  });

  it('names every kind of value a key takes when a client sends an array or an object', () => {
    const template = parseKeyTemplate('order:{body.id}');
    expect(renderKey(template, { body: { id: 12n } })).toBe('order:12');
    expect(renderKey(template, { body: { id: true } })).toBe('order:true');
    expect(() => renderKey(template, { body: { id: [1] } })).toThrow(
      expect.objectContaining({
        code: 'ERR_LOCK_HTTP_BAD_VALUE',
        message: '{body.id} must be a single string, number, bigint or boolean for the lock key',
      }),
    );
  });

  it('names a number that is not finite as such: every failed parse would share order:NaN', () => {
    const template = parseKeyTemplate('order:{body.id}');
    for (const id of [Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => renderKey(template, { body: { id } })).toThrow(
        expect.objectContaining({
          code: 'ERR_LOCK_HTTP_BAD_VALUE',
          message: `{body.id} must be a finite number for the lock key, and it is ${id}`,
        }),
      );
    }
    expect(() => renderKey(parseKeyTemplate('order:{params.id}'), { params: { id: Number.NaN } })).toThrow(
      expect.objectContaining({
        code: 'ERR_LOCK_HTTP_BAD_KEY',
        status: 500,
        message: '{params.id} must be a finite number for the lock key, and it is NaN',
      }),
    );
  });

  it('answers 400 for a param the route declares and the request left out, asking for the declared names only then', () => {
    const template = parseKeyTemplate('order:{params.shop}:{params.id}');
    const declared = vi.fn(() => ['shop', 'id']);
    expect(renderKey(template, { params: { shop: 'a', id: '7' } }, declared)).toBe('order:a:7');
    expect(declared).not.toHaveBeenCalled();
    expect(() => renderKey(template, { params: { shop: 'a' } }, declared)).toThrow(
      expect.objectContaining({ code: 'ERR_LOCK_HTTP_MISSING_VALUE', status: 400 }),
    );
    // Own, though undefined: declared without asking (Express 4).
    expect(() => renderKey(template, { params: { shop: 'a', id: undefined } })).toThrow(
      expect.objectContaining({ code: 'ERR_LOCK_HTTP_MISSING_VALUE', status: 400 }),
    );
    expect(() => renderKey(template, { params: { shop: 'a' } }, () => ['shop'])).toThrow(
      expect.objectContaining({ code: 'ERR_LOCK_HTTP_MISSING_PARAM', status: 500 }),
    );
  });

  it('answers 500 for a route param that is missing or not a single value', () => {
    const template = parseKeyTemplate('file:{params.path}');
    expect(() => renderKey(template, { params: {} })).toThrow(
      expect.objectContaining({ code: 'ERR_LOCK_HTTP_MISSING_PARAM', status: 500, expose: false }),
    );
    expect(() => renderKey(template, { params: { path: ['a', 'b'] } })).toThrow(
      expect.objectContaining({ code: 'ERR_LOCK_HTTP_BAD_KEY', status: 500 }),
    );
  });

  it('refuses a value holding a lone surrogate (possible in a JSON body), which would share a key with U+FFFD', () => {
    const template = parseKeyTemplate('order:{body.id}');
    for (const id of ['\uD800', 'x\uDFFF']) {
      expect(() => renderKey(template, { body: { id } })).toThrow(
        expect.objectContaining({ code: 'ERR_LOCK_HTTP_BAD_VALUE' }),
      );
    }
    expect(renderKey(template, { body: { id: '\uFFFD' } })).toBe('order:\uFFFD');
    expect(renderKey(template, { body: { id: '\uD83D\uDD12' } })).toBe('order:\u{1F512}');
  });

  it('reads own properties only', () => {
    expect(() => renderKey(parseKeyTemplate('x:{query.constructor}'), { query: {} })).toThrow(
      expect.objectContaining({ code: 'ERR_LOCK_HTTP_MISSING_VALUE' }),
    );
    expect(() => renderKey(parseKeyTemplate('x:{body.toString}'), { body: {} })).toThrow(
      expect.objectContaining({ code: 'ERR_LOCK_HTTP_MISSING_VALUE' }),
    );
  });
});

describe('Retry-After', () => {
  it('is whole seconds rounded up, at least 1, and the documented fallback when the holder is unknown', () => {
    expect([0, 1, 999, 1000, 1001, 2500, 30_000].map(retryAfterSeconds)).toEqual([1, 1, 1, 1, 2, 3, 30]);
    expect(RETRY_AFTER_UNKNOWN).toBe(1);
    expect(retryAfterSeconds(-1)).toBe(RETRY_AFTER_UNKNOWN);
  });
});

describe('options', () => {
  it('applies the documented defaults', () => {
    const settings = checkCommonOptions({ locker, key: 'k' }, []);
    expect(settings).toMatchObject({
      acquire: {},
      statusCode: 409,
      failOpen: false,
      logger: console,
      validate: { params: true, body: true },
    });
    expect(settings.message).toMatch(/Retry-After/);
  });

  it.each([
    [{ ttl: 0 }, 'ttl'],
    [{ ttl: 1.5 }, 'ttl'],
    // Shorter than a round trip may take: every grant would come back expired.
    [{ ttl: 9 }, 'ttl'],
    [{ wait: -1 }, 'wait'],
    [{ renew: 'yes' }, 'renew'],
    [{ statusCode: 429 }, 'statusCode'],
    [{ message: '' }, 'message'],
    [{ skip: true }, 'skip'],
    [{ failOpen: 1 }, 'failOpen'],
    [{ logger: { warn() {} } }, 'logger'],
    [{ validate: { cookies: false } }, 'validate.cookies'],
    [{ validate: { body: 'no' } }, 'validate.body'],
    [{ validate: 'no' }, 'validate'],
    [{ key: 42 }, 'key'],
    [{ locker: {} }, 'locker'],
    // The gate runs the route in `using`: a locker without it would fail every request.
    [{ locker: { acquire: notUsed } }, 'locker'],
    [{ handler: () => {} }, 'handler'],
    // null is no way to ask for the default: the locker refuses it for ttl, wait and renew.
    [{ statusCode: null }, 'statusCode'],
    [{ message: null }, 'message'],
    [{ failOpen: null }, 'failOpen'],
    [{ logger: null }, 'logger'],
    [{ validate: null }, 'validate'],
    [{ ttl: null }, 'ttl'],
  ])('refuses %j, naming %s', (bad, option) => {
    expect(() => checkCommonOptions({ locker, key: 'k', ...bad }, [])).toThrow(
      expect.objectContaining({ name: 'InvalidOptionError', code: 'ERR_LOCK_INVALID_OPTION', option }),
    );
  });

  it("refuses a ttl the locker's format refuses, when the middleware is made", () => {
    const seconds = createLocker({ redis, protocol: legacyProtocol({ unit: 's' }), prefix: '' });
    expect(() => checkCommonOptions({ locker: seconds, key: 'k', ttl: 1_500 }, [])).toThrow(
      /invalid option "ttl": 1500 \(expected whole seconds/,
    );
    expect(checkCommonOptions({ locker: seconds, key: 'k', ttl: 2_000 }, []).acquire).toEqual({ ttl: 2_000 });
  });

  it('keeps what was given, and turns single validations off', () => {
    const settings = checkCommonOptions(
      {
        locker,
        key: 'k',
        ttl: 5_000,
        wait: Number.POSITIVE_INFINITY,
        renew: true,
        validate: { body: false },
      },
      [],
    );
    expect(settings.acquire).toEqual({ ttl: 5_000, wait: Number.POSITIVE_INFINITY, renew: true });
    expect(settings.validate).toEqual({ params: true, body: false });
  });

  it('gives a validation left undefined its default, as any option left undefined', () => {
    const validate = { params: undefined, body: false };
    expect(checkCommonOptions({ locker, key: 'k', validate }, []).validate).toEqual({
      params: true,
      body: false,
    });
    expect(() => checkCommonOptions({ locker, key: 'k', validate: { params: null } }, [])).toThrow(
      /invalid option "validate\.params": null/,
    );
  });
});
