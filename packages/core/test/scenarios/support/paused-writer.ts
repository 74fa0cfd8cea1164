/**
 * Kleppmann's paused holder, in its own process so a test can SIGSTOP it. argv[2] is JSON
 * `{ urls, deployment, key, ttl, resource, fenced, history, id }`: one URL per master of the
 * deployment (see test/support/deployments.ts), the first also holding `resource`. On each `acquire` line on stdin it takes
 * the lock (a fixed lease of `ttl` ms, not renewed), checks it is held, prints `checked`, and
 * writes to `resource` only when the process is continued (SIGCONT): the pause falls between the
 * check and the write, where no lease check can help. The write goes through `fencedSet` when
 * `fenced`, else a plain HSET. It prints `{ fence, accepted }` and records every event to the
 * JSONL file `history`.
 */

import { createInterface } from 'node:readline';
import { fencedSet } from '@lock/core';
import { HistoryRecorder } from '@lock/testing';
import { Redis } from 'ioredis';
import { type DeploymentName, deployment } from '../../support/deployments.js';

interface Plan {
  urls: string[];
  deployment: DeploymentName;
  key: string;
  ttl: number;
  resource: string;
  fenced: boolean;
  history: string;
  id: string;
}

const plan = JSON.parse(process.argv[2]!) as Plan;
const clients = plan.urls.map((url) => new Redis(url));
const redis = clients[0]!;
const locker = deployment(plan.deployment).create(clients);
const recorder = new HistoryRecorder(plan.id, { file: plan.history });

async function write(fence: number): Promise<boolean> {
  if (plan.fenced) return fencedSet(redis, plan.resource, fence, plan.id);
  await redis.hset(plan.resource, 'fence', fence, 'value', plan.id);
  return true;
}

for await (const line of createInterface({ input: process.stdin })) {
  if (line !== 'acquire') break;
  const lock = await locker.acquire(plan.key, { ttl: plan.ttl, wait: 30_000 });
  recorder.acquired(lock);
  lock.assertHeld();
  const continued = new Promise((resolve) => process.once('SIGCONT', resolve));
  process.stdout.write('checked\n');
  await continued;
  const accepted = await write(lock.fence);
  recorder.wrote(lock, accepted, plan.resource);
  recorder.released(lock);
  await lock.release();
  process.stdout.write(`${JSON.stringify({ fence: lock.fence, accepted })}\n`);
}
recorder.close();
await locker.close();
for (const client of clients) client.disconnect();
