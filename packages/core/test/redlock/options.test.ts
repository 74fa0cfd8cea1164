import { afterAll, describe, expect, it } from 'vitest';
import { tokenProtocol } from '../../src/protocols/token/token.js';
import { createRedlock, quorumBackend } from '../../src/redlock/index.js';
import { idle, refusal } from './support.js';

// Bad options are refused with a typed error naming the value, before any connection is used.
const [a, b, c] = [idle(), idle(), idle()];
afterAll(() => {
  for (const client of [a, b, c]) client.disconnect();
});

describe('RedLock options', () => {
  it.each([
    ['no clients', { clients: [] }, 'clients', '[]'],
    ['clients not an array', { clients: 'redis://x' }, 'clients', '"redis://x"'],
    ['a client that is not ioredis', { clients: [a, { get() {} }] }, 'clients[1]', '{}'],
    [
      'the same client twice',
      { clients: [a, b, a] },
      'clients',
      '"clients[0] and clients[2] (the same client)"',
    ],
    ['a zero node timeout', { clients: [a, b, c], nodeTimeout: 0 }, 'nodeTimeout', '0'],
    ['a NaN node timeout', { clients: [a, b, c], nodeTimeout: Number.NaN }, 'nodeTimeout', 'NaN'],
    ['a drift factor of 1', { clients: [a, b, c], driftFactor: 1 }, 'driftFactor', '1'],
    ['a negative drift factor', { clients: [a, b, c], driftFactor: -0.1 }, 'driftFactor', '-0.1'],
    ['a clock that is not a function', { clients: [a, b, c], clock: 5 }, 'clock', '5'],
    ['a fractional node timeout', { clients: [a, b, c], nodeTimeout: 1.5 }, 'nodeTimeout', '1.5'],
    // Three rounds of it would make a command timeout no Node timer can arm.
    ['a node timeout of 1e9 ms', { clients: [a, b, c], nodeTimeout: 1e9 }, 'nodeTimeout', '1000000000'],
    ['a null node timeout', { clients: [a, b, c], nodeTimeout: null }, 'nodeTimeout', 'null'],
    ['a null drift factor', { clients: [a, b, c], driftFactor: null }, 'driftFactor', 'null'],
    ['a null clock', { clients: [a, b, c], clock: null }, 'clock', 'null'],
    [
      'a protocol named by a string other than token',
      { clients: [a, b, c], protocol: 'legacy' },
      'protocol',
      '"legacy"',
    ],
  ])('refuses %s', (_, options, option, shown) => {
    const error = refusal(() => quorumBackend(options as never));
    expect(error.option).toBe(option);
    expect(error.message).toContain(shown);
  });

  it('refuses a protocol that cannot raise the fence, naming it', () => {
    const { raiseFence: _, ...withoutFence } = tokenProtocol();
    const error = refusal(() => quorumBackend({ clients: [a, b, c], protocol: withoutFence }));
    expect(error.option).toBe('protocol');
    expect(error.message).toContain('"token"');
  });

  it('refuses unknown and invalid locker options through createRedlock', () => {
    expect(refusal(() => createRedlock({ clients: [a, b, c], tll: 5 } as never)).option).toBe('tll');
    expect(refusal(() => createRedlock({ clients: [a, b, c], ttl: -1 })).option).toBe('ttl');
    // Only undefined leaves an option out, as for createLocker.
    expect(refusal(() => createRedlock({ clients: [a, b, c], commandTimeout: null as never })).option).toBe(
      'commandTimeout',
    );
    expect(refusal(() => createRedlock({ clients: [a] as never, nodeTimeout: -5 })).option).toBe(
      'nodeTimeout',
    );
    expect(a.status).toBe('wait');
  });

  it("points createLocker's `redis` to `clients`, without showing the client", () => {
    const error = refusal(() => createRedlock({ redis: a } as never));
    expect(error.option).toBe('redis');
    expect(error.message).toMatch(/^unknown option "redis" \(expected one of the RedLock options: clients, /);
    expect(error.message).toMatch(/\. Did you mean "clients"\?$/);
    expect(a.status).toBe('wait');
  });

  it("takes 'token' for the token protocol, as createLocker does", () => {
    expect(quorumBackend({ clients: [a, b, c], protocol: 'token' }).protocol.name).toBe('token');
  });

  it('reports the quorum of its masters', () => {
    expect(quorumBackend({ clients: [a] }).quorum).toBe(1);
    expect(quorumBackend({ clients: [a, b] }).quorum).toBe(2);
    expect(quorumBackend({ clients: [a, b, c] }).quorum).toBe(2);
  });
});
