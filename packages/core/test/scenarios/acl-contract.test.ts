import { createLocker } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import { describe, expect, it, type RunnerTask } from 'vitest';
import { describeLockerContract } from '../contract/contract.js';
import { lockerTarget } from '../contract/target.js';
import { ACL_COMMANDS, ACL_PREFIX, type AclProtocol, setAclUser } from './support/acl.js';
import { reportFigures } from './support/figures.js';

/**
 * S27: the whole Locker contract suite, run as an ACL user limited to the lock key patterns and
 * the commands of `support/acl.ts` (the list `acl.test.ts` uses too). Every locker of the suite
 * connects as that user, with the `lock:app:` prefix its key patterns allow; only the harness's
 * own checks (keys without a TTL, subscribed channels, the ACL log) use the default user.
 */
const PASSWORD = 'contract-pw';

/**
 * The one refusal expected: the eviction check (S29) reads `CONFIG GET maxmemory-policy`, which a
 * least-privilege user is not given (CONFIG GET shows every server setting, `requirepass`
 * included); core then skips the check, as documented.
 */
const EXPECTED_REFUSAL = 'command config|get (toplevel)';

/** The tests under `task`, however deeply nested. */
function testsOf(task: RunnerTask): RunnerTask[] {
  return task.type === 'suite' ? task.tasks.flatMap(testsOf) : [task];
}

/** What the server's ACL log held when each run ended (read just before the server stopped). */
const refusals = new Map<AclProtocol, string[]>();

for (const protocol of ['token', 'legacy'] as const) {
  const contract = `${protocol} protocol as an ACL user with only the S27 commands`;
  describeLockerContract(contract, async () => {
    const server: RedisServer = await startRedis();
    const admin = server.client();
    await setAclUser(admin, 'locker', PASSWORD, protocol);
    await admin.call('ACL', 'LOG', 'RESET');
    const redis = server.client({ username: 'locker', password: PASSWORD });
    return lockerTarget({
      create: (overrides) => createLocker({ redis, protocol, prefix: ACL_PREFIX, ...overrides }),
      clients: [admin],
      async stop() {
        const log = (await admin.call('ACL', 'LOG')) as unknown[][];
        refusals.set(
          protocol,
          log.map((entry) => {
            const fields = new Map<string, unknown>();
            for (let i = 0; i < entry.length; i += 2) fields.set(String(entry[i]), entry[i + 1]);
            return `${fields.get('reason')} ${fields.get('object')} (${fields.get('context')})`;
          }),
        );
        await server.stop();
      },
    });
  });

  describe(`S27: ${protocol} contract under ACL, afterwards`, () => {
    it('the whole suite passed, and no command or key of it was refused by the ACL (but the eviction check’s CONFIG GET)', ({
      task,
    }) => {
      const refused = refusals.get(protocol);
      expect(refused).toBeDefined();
      const unexpected = refused!.filter((refusal) => refusal !== EXPECTED_REFUSAL);
      // Read from the suite's own results, so the figure published is what ran and passed.
      const suite = task.file.tasks.find((candidate) => candidate.name.endsWith(contract));
      const tests = suite ? testsOf(suite) : [];
      const notPassed = tests.filter((test) => test.result?.state !== 'pass').map((test) => test.name);
      reportFigures(`S27 ${protocol}`, {
        'contract tests passed': `${tests.length - notPassed.length} of ${tests.length}`,
        commands: ACL_COMMANDS[protocol].join(' '),
        'ACL refusals besides CONFIG GET': unexpected.length,
      });
      expect(unexpected).toEqual([]);
      expect(tests.length).toBeGreaterThan(0);
      expect(notPassed).toEqual([]);
    });
  });
}
