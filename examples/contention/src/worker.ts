/** One contender of the demo: sells one item per hold, writing through the fenced resource. */
import { createLocker, fencedGet, fencedSet } from '@lock/core';
import { connectRedis } from '../../shared/redis.js';

const [name, url, stockKey, roundsArg] = process.argv.slice(2) as [string, string, string, string];
// The demo's process is gone (killed, or interrupted alone): stop, rather than live on as an
// orphan that retries a Redis the demo may have taken down with it and writes to the terminal.
const orphaned = () => process.exit(1);
process.once('disconnect', orphaned);
const redis = await connectRedis(url);
const locker = createLocker({ redis });
const startAt = await new Promise<number>((resolve) => {
  process.once('message', (at) => resolve(Number(at)));
  process.send?.('ready');
});
const at = () => `${String(Date.now() - startAt).padStart(5)} ms`;

for (let round = 0; round < Number(roundsArg); round++) {
  await locker.using('demo:order:42', { ttl: 5_000, wait: 10_000 }, async (lock) => {
    const stock = await fencedGet(redis, stockKey);
    const left = Number(stock?.value ?? 0) - 1;
    await new Promise((resolve) => setTimeout(resolve, 50));
    const written = await fencedSet(redis, stockKey, lock.fence, String(left));
    console.log(
      `${at()}  ${name.padEnd(5)} holds the lock (fence ${lock.fence}), stock -> ${left}${written ? '' : ' REFUSED'}`,
    );
  });
  await new Promise((resolve) => setTimeout(resolve, 10));
}

await locker.close();
redis.disconnect();
process.off('disconnect', orphaned);
process.disconnect?.();
