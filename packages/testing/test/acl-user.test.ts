import { describe, expect, it } from 'vitest';
import { aclUser } from '../src/index.js';
import { useRedis } from '../src/vitest/index.js';

// `info`: ioredis's ready check.
const limited = { commands: ['info', 'get', 'set', 'publish'], keys: ['app:*'], channels: ['news:*'] };

describe('aclUser', () => {
  it('lets the user run its commands on its keys and channels, and nothing else', async () => {
    const server = await useRedis();
    const redis = server.client(await aclUser(server, { name: 'app', password: 'pw', ...limited }));
    await redis.set('app:1', 'v');
    expect(await redis.get('app:1')).toBe('v');
    expect(await redis.publish('news:1', 'hi')).toBe(0);
    await expect(redis.get('other:1')).rejects.toThrow(/^NOPERM .*key/);
    await expect(redis.del('app:1')).rejects.toThrow(/^NOPERM .*\bdel\b/);
    await expect(redis.publish('other:1', 'hi')).rejects.toThrow(/^NOPERM .*channel/);
  });

  it('replaces the keys, channels and commands of an existing user', async () => {
    const server = await useRedis();
    const admin = server.client();
    await aclUser(admin, { name: 'app', password: 'pw', commands: ['@all'], keys: ['*'], channels: ['*'] });
    const redis = server.client(await aclUser(admin, { name: 'app', password: 'pw', ...limited }));
    expect(await redis.get('app:1')).toBe(null);
    await expect(redis.get('other:1')).rejects.toThrow(/^NOPERM .*key/);
    await expect(redis.del('app:1')).rejects.toThrow(/^NOPERM .*\bdel\b/);
    await expect(redis.publish('other:1', 'hi')).rejects.toThrow(/^NOPERM .*channel/);
  });

  it('adds the password to those the user has, unless reset, which leaves only this one', async () => {
    const server = await useRedis();
    const admin = server.client();
    const passwords = async () => ((await admin.call('ACL', 'GETUSER', 'app')) as unknown[])[3];
    await aclUser(admin, { name: 'app', password: 'first', ...limited });
    await aclUser(admin, { name: 'app', password: 'second', ...limited });
    expect(await passwords()).toHaveLength(2);
    await aclUser(admin, { name: 'app', password: 'third', reset: true, ...limited });
    expect(await passwords()).toHaveLength(1);
    const login = await aclUser(admin, { name: 'app', password: 'third', reset: true, ...limited });
    expect(login).toEqual({ username: 'app', password: 'third' });
    expect(await server.client(login).get('app:1')).toBe(null);
  });
});
