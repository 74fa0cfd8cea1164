import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

/** Runs an example as the README does, against the redis-server it starts itself. */
async function runExample(name: string): Promise<string> {
  const { REDIS_URL: _, ...env } = process.env;
  const { stdout } = await run(
    process.execPath,
    ['--import', './tooling/register.mjs', `examples/${name}/src/main.ts`],
    { cwd: root, env, timeout: 60_000 },
  ).catch((error: Error & { stdout?: string }) => {
    // The message holds stderr only; what the example printed up to its failure is in stdout.
    throw new Error(`${error.message}\n${error.stdout}`);
  });
  return stdout;
}

// Each example ends on the line that shows what the lock changed; a run that throws or exits
// non-zero rejects.
describe('the examples run to the end on their own redis-server', () => {
  it.each([
    ['contention', /^stock left: 90 \(started at 100, 10 items sold/m],
    ['express-orders', /^without the lock: oversold by \d+; with it: sold 5 of 5$/m],
    ['koa-inventory', /^without the lock: oversold by \d+; with it: reserved 5 of 5$/m],
    ['graphql-checkout', /^ {2}order B-200 was charged 1 time\(s\)$/m],
    // The last line: PHP processes and Node workers sold under one lock key, none overwrote another.
    ['cross-language', /\ncounter 8 after 8 sales \(6 from Node, 2 from PHP\): no update lost\n$/],
  ])('%s', async (name, outcome) => {
    const stdout = await runExample(name);
    expect(stdout).toMatch(/^started redis-server at redis:\/\/127\.0\.0\.1:\d+$/m);
    expect(stdout).toMatch(outcome);
  });
});
