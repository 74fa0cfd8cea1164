/**
 * A warehouse has 5 units of an item. 20 orders reserve one at the same moment. Each
 * reservation reads the inventory counter, does some slow work (checking the address), then
 * writes the counter back: a read-modify-write that oversells when two reservations interleave.
 * The same route behind `lock({ key: 'sku:{params.sku}' })` reserves exactly 5 and answers the
 * rest "out of stock". Uses REDIS_URL when set, else an embedded redis-server on a free port.
 */
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import Router from '@koa/router';
import { createLocker } from '@lock/core';
import { lock } from '@lock/koa';
import { startRedis } from '@lock/testing';
import Koa, { type Middleware } from 'koa';
import { connectRedis } from '../../shared/redis.js';

const orders = 20;
const units = 5;
const server = process.env.REDIS_URL ? undefined : await startRedis();
const url = process.env.REDIS_URL ?? server!.url;
const redis = await connectRedis(url);
const locker = createLocker({ redis });
const inventoryKey = (sku: string) => `demo:inventory:${process.pid}:${sku}`;
console.log(server ? `started redis-server at ${url}` : `using REDIS_URL=${url}`);

const reserve: Middleware = async (ctx) => {
  const sku = String(ctx.params.sku);
  const left = Number(await redis.get(inventoryKey(sku)));
  if (left <= 0) {
    ctx.status = 410;
    ctx.body = { reserved: false, reason: 'out of stock' };
    return;
  }
  await sleep(20); // checking the delivery address
  await redis.set(inventoryKey(sku), left - 1);
  await redis.incr(`${inventoryKey(sku)}:reserved`);
  ctx.body = { reserved: true, fence: ctx.state.lock?.fence };
};

const router = new Router();
router.post('/unsafe/skus/:sku/reserve', reserve);
router.post(
  '/skus/:sku/reserve',
  lock({ locker, key: 'sku:{params.sku}', ttl: 10_000, wait: 5_000 }),
  reserve,
);
const app = new Koa();
app.use(router.routes());
const listener = http.createServer(app.callback()).listen(0, '127.0.0.1');
await once(listener, 'listening');
const base = `http://127.0.0.1:${(listener.address() as AddressInfo).port}`;

async function rush(path: string, sku: string): Promise<number> {
  await redis.set(inventoryKey(sku), units);
  await redis.del(`${inventoryKey(sku)}:reserved`);
  const answers = await Promise.all(
    Array.from({ length: orders }, () => fetch(`${base}${path}`, { method: 'POST' }).then((r) => r.status)),
  );
  const reserved = Number(await redis.get(`${inventoryKey(sku)}:reserved`));
  const counts = new Map<number, number>();
  for (const status of answers) counts.set(status, (counts.get(status) ?? 0) + 1);
  const statuses = [...counts].map(([status, count]) => `${count}×${status}`);
  console.log(
    `${path.padEnd(26)} ${units} in stock, ${orders} orders: reserved ${reserved} (${statuses.join(', ')})`,
  );
  await redis.del(inventoryKey(sku), `${inventoryKey(sku)}:reserved`);
  return reserved;
}

try {
  const unsafe = await rush('/unsafe/skus/A1/reserve', 'A1');
  const locked = await rush('/skus/B2/reserve', 'B2');
  console.log(`without the lock: oversold by ${unsafe - units}; with it: reserved ${locked} of ${units}`);
  if (locked !== units) throw new Error('the lock did not prevent overselling');
} finally {
  listener.close();
  listener.closeAllConnections();
  await locker.close();
  redis.disconnect();
  await server?.stop();
}
