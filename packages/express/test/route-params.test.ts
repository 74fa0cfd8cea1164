import { describe, expect, it } from 'vitest';
import { pathParams } from '../src/route-params.js';

describe('route params', () => {
  it.each([
    ['/orders{/:id}', ['id']],
    ['/shops/:shop/orders{/:id}{.:format}', ['shop', 'id', 'format']],
    ['/files{/*path}', ['path']],
    ['/:"order id"/:"a\\"b"', ['order id', 'a"b']],
    ['/price\\:id/:$é_1', ['$é_1']],
    ['/a\\\\:b', ['b']],
    ['/orders', []],
  ])('reads the params %j declares', (path, names) => {
    expect(pathParams(path)).toEqual(names);
  });

  it('reads every path of an array, nested as Express flattens it, and none from a RegExp or no route', () => {
    expect(pathParams(['/orders', ['/orders/:id', '/carts/:cart']])).toEqual(['id', 'cart']);
    expect(pathParams(/^\/orders\/(?<id>\d+)$/)).toEqual([]);
    expect(pathParams(undefined)).toEqual([]);
  });

  it('parses a path once', () => {
    expect(pathParams('/shops/:shop/orders{/:id}')).toBe(pathParams('/shops/:shop/orders{/:id}'));
  });
});
