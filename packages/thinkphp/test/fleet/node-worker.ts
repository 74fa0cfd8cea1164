/**
 * A Node member of a contending fleet, the twin of `cli.php worker`: after `go`, lock, read-
 * modify-write the witness counter, unlock, until the shared monotonic deadline; one JSON line
 * per hold with its hrtime interval and fence. Run by fleet.ts in its own process, with its own
 * connection, so it races the PHP workers as another host would.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { seededRandom } from '@lock/testing';
import { Lock } from '@lock/thinkphp';
import { Redis } from 'ioredis';
import type { WorkerArgs } from './fleet.js';

const args = JSON.parse(process.argv[2]!) as WorkerArgs;
const redis = new Redis({ port: args.port, lazyConnect: true });
await redis.connect();
const draw = seededRandom(args.seed);
const between = (min: number, max: number) => min + Math.floor(draw() * (max - min + 1));
// Polls about as often as a PHP worker (three tries, then 10-30 ms), so both kinds race alike.
const lock = new Lock(args.key, { redis, expire: args.expire, sleep: 0.02 });
// Loads the scripts before the race, so Node's first attempt is a single EVALSHA like the rest.
const warmUp = new Lock(`${args.key}:warm-up:${args.id}`, { redis, expire: args.expire });
if (await warmUp.lock()) await warmUp.unlock();

await redis.rpush(`${args.fleet}:ready`, String(args.id));
const go = await redis.blpop(`${args.fleet}:go:${args.id}`, 30);
if (!go) throw new Error('no go within 30 s');
const until = BigInt(go[1]);
let announced = false;
while (process.hrtime.bigint() < until) {
  if (await lock.lock()) {
    const start = process.hrtime.bigint();
    if (!announced) await redis.rpush(`${args.fleet}:held`, String(args.id));
    announced = true;
    const seen = Number((await redis.get(args.witness)) ?? '0');
    await sleep(between(args.work[0], args.work[1]));
    await redis.set(args.witness, String(seen + 1));
    const end = process.hrtime.bigint();
    const fence = lock.handle?.fence ?? -1;
    await lock.unlock();
    process.stdout.write(
      `${JSON.stringify({ worker: args.id, start: String(start), end: String(end), fence })}\n`,
    );
  } else {
    await sleep(between(10, 30));
  }
}
redis.disconnect();
