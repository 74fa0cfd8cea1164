/**
 * Mixed fleets: a Node service and a PHP service sell the same goods. Every sale is a
 * read-modify-write of one sold counter under the lock `lock_goods:<id>`: the PHP processes take
 * it with ThinkPHP's Lock class of seed 001 (php-cli + Predis), the Node workers with
 * @lock/thinkphp's Lock, which writes and reads the key the way the PHP class does. The two
 * sides exclude each other, so the counter ends equal to the number of sales (exit code 1 if
 * not). Uses REDIS_URL when set, else an embedded redis-server on a free loopback port.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { startRedis } from '@lock/testing';
import { connectRedis } from '../../shared/redis.js';
import { monotonicMs, sellFromNode } from './node-worker.js';
import { startPhpWorker } from './php-worker.js';

// The seed's LOCK_EXPIRE is 3 s, and a PHP sale keeps the key for its whole lease plus 1 s: 1 s
// keeps the demo to a few seconds.
const expire = 1;
// A sale may wait for two PHP leases in a row (one PHP process takes another's lock over before
// Redis expires it: hazard B2), and some margin.
const patience = 3 * (expire + 1);
const server = process.env.REDIS_URL ? undefined : await startRedis();
const url = process.env.REDIS_URL ?? server!.url;
const redis = await connectRedis(url);
// Goods of this run only, so runs sharing a REDIS_URL server never meet.
const goods = process.pid;
const key = `lock_goods:${goods}`;
const counter = `goods:${goods}:sold`;
const plan = { key, counter, expire, patience };

console.log(server ? `started redis-server at ${url}` : `using REDIS_URL=${url}`);
const php = ['php-1', 'php-2'].map((name) => ({ name, ...startPhpWorker({ name, url, ...plan, sales: 1 }) }));
try {
  await Promise.all(php.map((worker) => worker.ready));
  const startedAt = monotonicMs();
  const node = ['node-1', 'node-2'].map((name) => ({
    name,
    done: sellFromNode(name, { redis, ...plan, sales: 3 }),
  }));
  const selling = Promise.all(
    [...php, ...node].map(async ({ name, done }) => (await done).map((sale) => ({ name, ...sale }))),
  );
  // The PHP requests come in while Node is selling, so that the lock passes both ways.
  await sleep(100);
  for (const worker of php) worker.go();
  const sales = (await selling).flat();

  const ms = (at: number) => `${Math.round(at - startedAt)}`.padStart(5);
  console.log(`who held ${key} when (ms since the start):`);
  for (const { name, start, end, counter: written } of sales.sort((a, b) => a.start - b.start)) {
    console.log(`${ms(start)} - ${ms(end)}  ${name.padEnd(6)}  sold -> ${written}`);
  }
  const sold = Number(await redis.get(counter));
  const fromPhp = sales.filter(({ name }) => name.startsWith('php')).length;
  const summary = `counter ${sold} after ${sales.length} sales (${sales.length - fromPhp} from Node, ${fromPhp} from PHP)`;
  if (sold === sales.length) console.log(`${summary}: no update lost`);
  else {
    console.log(
      `${summary}: LOST ${sales.length - sold} update(s), the two sides did not exclude each other`,
    );
    process.exitCode = 1;
  }
} finally {
  for (const worker of php) worker.stop();
  await redis.del(counter);
  redis.disconnect();
  await server?.stop();
}
