/**
 * 1 000 acquire / using / release cycles, then close. The process must then exit on its own
 * (no process.exit): any timer or socket left behind would keep it alive and fail the test.
 */
import { createLocker } from '@lock/core';
import { Redis } from 'ioredis';

const redis = new Redis(process.argv[2]!);
const locker = createLocker({ redis });
for (let i = 0; i < 500; i++) {
  const lock = await locker.acquire(`cycle:${i % 7}`);
  await lock.release();
  await locker.using(`cycle:${i % 5}`, async () => {});
}
console.log('1000 cycles done');
await locker.close();
redis.disconnect();
