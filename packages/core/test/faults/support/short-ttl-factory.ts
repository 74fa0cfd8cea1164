import type { Locker } from '@lock/core';
import { Redis } from 'ioredis';
import { type DeploymentName, deployment } from '../../support/deployments.js';
import type { WorkerLocker } from '../../support/worker.js';

/** A lock script one worker sent: hrtime (shared by the processes of the host) when written and when settled. */
export interface ScriptCall {
  readonly sent: bigint;
  readonly settled: bigint;
}

/**
 * Where the `workers` of a run meet before they begin (`<key>:started` counts them), and where
 * each hands over its script calls when done (`<key>:scripts`).
 */
export interface Report {
  readonly url: string;
  readonly key: string;
  readonly workers: number;
}

/** How long a worker waits for the others to start: a run whose workers never all start is broken. */
const START_LIMIT = 30_000;

/**
 * Contention factory for one of the `DEPLOYMENTS` (one URL per master) whose every acquisition
 * gets `config.ttl` (the shared worker asks for 5 s, too long for a fault to outlast it). Its
 * worker begins only once every worker of the run has started: they start seconds apart on a
 * loaded machine, and with a protocol whose waiters poll the first ones would run alone, even to
 * the end of their iterations, so that a fault meant for a contended run could meet none. On
 * close it hands over every script (EVAL, EVALSHA: how every protocol locks) its lock
 * connections sent: what a fault did to the lock commands is then known whatever the protocol
 * waits by.
 */
export default async function shortTtlLocker(config: {
  urls: readonly string[];
  ttl: number;
  deployment: DeploymentName;
  report: Report;
}): Promise<WorkerLocker> {
  const scripts: ScriptCall[] = [];
  const clients = config.urls.map((url) => traced(new Redis(url), scripts));
  const inner = deployment(config.deployment).create(clients);
  const report = new Redis(config.report.url);
  await report.incr(`${config.report.key}:started`);
  const until = performance.now() + START_LIMIT;
  while ((await started(report, config.report)) < config.report.workers) {
    if (performance.now() > until) throw new Error(`the other workers did not start in ${START_LIMIT} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const locker: Locker = {
    acquire: (key, options) => inner.acquire(key, { ...options, ttl: config.ttl }),
    tryAcquire: (key, options) => inner.tryAcquire(key, { ...options, ttl: config.ttl }),
    using: inner.using.bind(inner),
    checkOptions: (options) => inner.checkOptions({ ...options, ttl: config.ttl }),
    inspect: (key) => inner.inspect(key),
    isLocked: (key) => inner.isLocked(key),
    close: () => inner.close(),
  };
  return {
    locker,
    async close() {
      await inner.close();
      for (const client of clients) client.disconnect();
      const calls = scripts.map(({ sent, settled }) => [String(sent), String(settled)]);
      await report.rpush(`${config.report.key}:scripts`, JSON.stringify(calls));
      report.disconnect();
    },
  };
}

/** Notes each script `redis` sends, when its reply (or failure) comes back. */
function traced(redis: Redis, scripts: ScriptCall[]): Redis {
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (command, stream) => {
    if (command.name === 'evalsha' || command.name === 'eval') {
      // Written now, or later from the offline queue: Redis sees it no earlier.
      const sent = process.hrtime.bigint();
      const settled = () => {
        scripts.push({ sent, settled: process.hrtime.bigint() });
      };
      command.promise.then(settled, settled);
    }
    return send(command, stream);
  };
  return redis;
}

/** Workers counted as started on `report`. */
async function started(client: Redis, report: Report): Promise<number> {
  return Number((await client.get(`${report.key}:started`)) ?? '0');
}

/** Every script call the closed workers handed over to `report`. */
export async function scriptCalls(client: Redis, report: Report): Promise<ScriptCall[]> {
  const lists = await client.lrange(`${report.key}:scripts`, 0, -1);
  return lists.flatMap((list) =>
    (JSON.parse(list) as [string, string][]).map(([sent, settled]) => ({
      sent: BigInt(sent),
      settled: BigInt(settled),
    })),
  );
}
