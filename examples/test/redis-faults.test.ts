import { execFile, fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { freePort, type RedisServer, startRedis } from '@lock/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs an example against `url`; `timeout` kills it (and fails the expectations) if it hangs. */
async function runExample(name: string, url: string, timeout: number): Promise<Outcome> {
  return run(process.execPath, ['--import', './tooling/register.mjs', `examples/${name}/src/main.ts`], {
    cwd: root,
    env: { ...process.env, REDIS_URL: url },
    timeout,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: Error & { code?: number; stdout: string; stderr: string }) => ({
      code: typeof error.code === 'number' ? error.code : -1,
      stdout: error.stdout,
      stderr: error.stderr,
    }),
  );
}

// Nothing listens on the port: every example that connects to a REDIS_URL says so in one line
// and exits 1 at once, instead of retrying for a minute and printing each failed attempt.
describe('an unreachable REDIS_URL ends an example at once', () => {
  it.each(['contention', 'express-orders', 'koa-inventory', 'graphql-checkout', 'cross-language'])(
    '%s',
    async (name) => {
      const port = await freePort();
      const url = `redis://127.0.0.1:${port}`;
      const outcome = await runExample(name, url, 15_000);
      expect(outcome).toEqual({
        code: 1,
        stdout: '',
        stderr: `cannot reach Redis at ${url}: connect ECONNREFUSED 127.0.0.1:${port}\n`,
      });
    },
  );
});

describe('against a redis-server', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(() => server?.stop());

  // Writes paused: the client connects, but no lock can be taken, so every payOrder is answered
  // LOCK_UNAVAILABLE and nothing is charged. The demo says so rather than "double payment".
  it('graphql-checkout reports LOCK_UNAVAILABLE, not a double payment, when no lock can be taken', async () => {
    const admin = new Redis(server.url);
    try {
      await admin.call('CLIENT', 'PAUSE', '30000', 'WRITE');
      const outcome = await runExample('graphql-checkout', server.url, 25_000);
      expect(outcome.code).toBe(1);
      expect(outcome.stdout).toMatch(/^ {2}order B-200 was charged 0 time\(s\)$/m);
      expect(outcome.stderr).toMatch(/Error: payOrder failed with LOCK_UNAVAILABLE: /);
      expect(outcome.stderr).not.toMatch(/double payment|not charged/);
    } finally {
      await admin.call('CLIENT', 'UNPAUSE');
      admin.disconnect();
    }
  });

  // The demo's process went away without its process group (a SIGINT to it alone): the worker
  // must not live on as an orphan.
  it('a contention worker exits when its parent disconnects', async () => {
    const worker = fork(
      fileURLToPath(new URL('../contention/src/worker.ts', import.meta.url)),
      ['alice', server.url, `test:stock:${process.pid}`, '5'],
      { cwd: root, execArgv: ['--import', './tooling/register.mjs'], stdio: 'pipe' },
    );
    // Also when the test times out, which leaves the awaits below pending.
    onTestFinished(() => {
      if (worker.exitCode === null && worker.signalCode === null) worker.kill('SIGKILL');
    });
    const [message] = await once(worker, 'message');
    expect(message).toBe('ready');
    const exited = once(worker, 'exit');
    worker.disconnect();
    const [code] = await exited;
    expect(code).toBe(1);
  });
});
