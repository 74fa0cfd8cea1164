/**
 * The main demo: two processes ("alice" and "bob") contend for one lock guarding a stock
 * counter. Each hold is fenced, so a write from a holder that lost its lock would be refused.
 * Uses REDIS_URL when set, else an embedded redis-server on a free loopback port.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startRedis } from '@lock/testing';
import { connectRedis } from '../../shared/redis.js';

const rounds = 5;
const server = process.env.REDIS_URL ? undefined : await startRedis();
const url = process.env.REDIS_URL ?? server!.url;
const redis = await connectRedis(url);
const stockKey = `demo:stock:${process.pid}`;

console.log(server ? `started redis-server at ${url}` : `using REDIS_URL=${url}`);
await redis.hset(stockKey, 'fence', '0', 'value', '100');
await redis.expire(stockKey, 300);

const worker = fileURLToPath(new URL('./worker.ts', import.meta.url));
const children = ['alice', 'bob'].map((name) =>
  fork(worker, [name, url, stockKey, String(rounds)], { stdio: 'inherit' }),
);
const workers = children.map(
  (child) =>
    new Promise<void>((resolve, reject) => {
      child.once('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`worker exited with ${code}`)),
      );
    }),
);
// Both start at the same moment, once each has loaded, so they really contend. A worker that
// exits first (it could not reach Redis) ends the wait.
await Promise.all(
  children.map((child, i) =>
    Promise.race([new Promise((resolve) => child.once('message', resolve)), workers[i]]),
  ),
);
const startAt = Date.now();
for (const child of children) child.send(startAt);

try {
  await Promise.all(workers);
  const left = await redis.hget(stockKey, 'value');
  console.log(`stock left: ${left} (started at 100, ${2 * rounds} items sold one at a time under the lock)`);
  if (Number(left) !== 100 - 2 * rounds) throw new Error('lost update: the lock did not exclude');
} finally {
  await redis.del(stockKey);
  redis.disconnect();
  await server?.stop();
}
