import { cpus, release, totalmem } from 'node:os';
import type { Redis } from 'ioredis';

/** The host a run measured, printed under its tables and stored with its figures. */
export interface Machine {
  readonly cpus: number;
  readonly cpu: string;
  readonly memoryGiB: number;
  readonly kernel: string;
  readonly node: string;
  readonly redis: string;
}

/** Describes this host, and the version of the redis-server `admin` is connected to. */
export async function describeMachine(admin: Redis): Promise<Machine> {
  return {
    cpus: cpus().length,
    cpu: cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    node: process.version,
    redis: /redis_version:(\S+)/.exec(await admin.info('server'))?.[1] ?? 'unknown',
  };
}

/** One line naming the host, for the foot of a report. */
export function machineLine(machine: Machine): string {
  return `machine: ${machine.cpus} × ${machine.cpu}, ${machine.memoryGiB} GiB, Linux ${machine.kernel}, Node ${machine.node}, Redis ${machine.redis}`;
}
