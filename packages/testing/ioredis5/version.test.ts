import { createRequire } from 'node:module';
import { startRedis } from '@lock/testing';
import { connectThinkRedis, parseThinkEnv } from '@lock/thinkphp';
import { Cluster, Redis } from 'ioredis';
import { expect, it } from 'vitest';

// Node's own require, which the project's alias does not touch: it finds both installed versions.
const require = createRequire(import.meta.url);
const five = require('ioredis-5');
const six = require('ioredis');

it('resolves every ioredis import of this project to ioredis 5', async () => {
  expect(require('ioredis-5/package.json').version).toMatch(/^5\./);
  expect(require('ioredis/package.json').version).toMatch(/^6\./);
  expect(Redis).toBe(five.Redis);
  expect(Cluster).toBe(five.Cluster);
  await using server = await startRedis();
  expect(server.client()).toBeInstanceOf(five.Redis);
  expect(server.client()).not.toBeInstanceOf(six.Redis);
  const think = connectThinkRedis(parseThinkEnv(''), { lazyConnect: true });
  expect(think).toBeInstanceOf(five.Redis);
  think.disconnect();
});
