/**
 * A shop sells the last 5 units of an item. 20 customers pay at the same moment. Each payment
 * reads the stock, does some slow work (charging a card), then writes the stock back: a
 * read-modify-write that oversells when two payments interleave. The same handler run by
 * `locked({ key: 'item:{params.id}' }, pay)` sells exactly 5 and answers the rest "sold out".
 * `locked()` rather than `lock()`: it holds the lock until the handler has settled, not merely
 * until the response has closed, as a handler that writes needs.
 * Uses REDIS_URL when set, else an embedded redis-server on a free loopback port.
 */
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLocker } from '@lock/core';
import { locked } from '@lock/express';
import { startRedis } from '@lock/testing';
import express, { type RequestHandler } from 'express';
import { connectRedis } from '../../shared/redis.js';

const customers = 20;
const units = 5;
const server = process.env.REDIS_URL ? undefined : await startRedis();
const url = process.env.REDIS_URL ?? server!.url;
const redis = await connectRedis(url);
const locker = createLocker({ redis });
const stockKey = (id: string) => `demo:stock:${process.pid}:${id}`;
console.log(server ? `started redis-server at ${url}` : `using REDIS_URL=${url}`);

const pay: RequestHandler = async (req, res) => {
  const id = String(req.params.id);
  const stock = Number(await redis.get(stockKey(id)));
  if (stock <= 0) {
    res.status(410).json({ sold: false, reason: 'sold out' });
    return;
  }
  await sleep(20); // charging the card
  await redis.set(stockKey(id), stock - 1);
  await redis.incr(`${stockKey(id)}:sold`);
  res.json({ sold: true, fence: req.lock?.fence });
};

const app = express();
app.post('/unsafe/items/:id/pay', pay);
app.post('/items/:id/pay', locked({ locker, key: 'item:{params.id}', ttl: 10_000, wait: 5_000 }, pay));
const http = app.listen(0, '127.0.0.1');
await once(http, 'listening');
const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

async function rush(path: string, id: string): Promise<number> {
  await redis.set(stockKey(id), units);
  await redis.del(`${stockKey(id)}:sold`);
  const answers = await Promise.all(
    Array.from({ length: customers }, () =>
      fetch(`${base}${path}`, { method: 'POST' }).then((r) => r.status),
    ),
  );
  const sold = Number(await redis.get(`${stockKey(id)}:sold`));
  const counts = new Map<number, number>();
  for (const status of answers) counts.set(status, (counts.get(status) ?? 0) + 1);
  const statuses = [...counts].map(([status, count]) => `${count}×${status}`);
  console.log(
    `${path.padEnd(22)} ${units} in stock, ${customers} customers: sold ${sold} (${statuses.join(', ')})`,
  );
  await redis.del(stockKey(id), `${stockKey(id)}:sold`);
  return sold;
}

try {
  const unsafe = await rush('/unsafe/items/1/pay', '1');
  const locked = await rush('/items/2/pay', '2');
  console.log(`without the lock: oversold by ${unsafe - units}; with it: sold ${locked} of ${units}`);
  if (locked !== units) throw new Error('the lock did not prevent overselling');
} finally {
  http.close();
  http.closeAllConnections();
  await locker.close();
  redis.disconnect();
  await server?.stop();
}
