import { createRequire } from 'node:module';
import { dbStatementSerializer } from '@lock/otel';
import { describe, expect, it } from 'vitest';

/** The serializer instrumentation-ioredis uses when given none, from its own dependency. */
const fromInstrumentation = createRequire(
  createRequire(import.meta.url).resolve('@opentelemetry/instrumentation-ioredis'),
);
const { defaultDbStatementSerializer } = fromInstrumentation('@opentelemetry/redis-common') as {
  defaultDbStatementSerializer: (command: string, args: unknown[]) => string;
};

const OWNER = 'e5b8c1f0-2d4e-4f4a-9d61-0d3c7d2b9e11:42';
const SHA = '6e4ec62f7bcab602e5735e341e650b7ccb191ec6';

describe('dbStatementSerializer', () => {
  it('shows a script only by digest and key count', () => {
    expect(
      dbStatementSerializer('evalsha', [
        SHA,
        2,
        '{lock:order:42}',
        '{lock:order:42}:fence',
        OWNER,
        30_000,
        '0',
      ]),
    ).toBe(`evalsha ${SHA} 2 [5 other arguments]`);
    expect(dbStatementSerializer('EVALSHA_RO', [SHA, '1', 'k', OWNER])).toBe(
      `EVALSHA_RO ${SHA} 1 [2 other arguments]`,
    );
    expect(dbStatementSerializer('fcall', ['lock_acquire', 1, 'k', OWNER])).toBe(
      'fcall lock_acquire 1 [2 other arguments]',
    );
  });

  it('replaces the source of EVAL by [script]', () => {
    expect(dbStatementSerializer('eval', ['return redis.call("get", KEYS[1])', 1, 'k', OWNER])).toBe(
      'eval [script] 1 [2 other arguments]',
    );
  });

  it('shows nothing it cannot vouch for from a malformed script call', () => {
    expect(dbStatementSerializer('evalsha', [SHA, OWNER, 'k'])).toBe(`evalsha ${SHA} [2 other arguments]`);
    expect(dbStatementSerializer('evalsha', [OWNER])).toBe('evalsha [1 other arguments]');
    expect(dbStatementSerializer('evalsha', [])).toBe('evalsha');
  });

  it('never shows an argument after the key count, whatever the script', () => {
    for (const command of ['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro', 'EvalSha']) {
      expect(
        dbStatementSerializer(command, [SHA, 3, 'a', 'b', 'c', OWNER, Buffer.from(OWNER)]),
      ).not.toContain(OWNER);
    }
  });

  it('shows an owner named in a channel or key as [owner]: a Redisson fair lock subscribes to its waiter’s channel', () => {
    // `redisson_lock__channel:{name}:<owner>`, the owner being `<client uuid>:<thread id>`.
    const channel = `redisson_lock__channel:{order:42}:${OWNER}`;
    for (const command of ['subscribe', 'SSUBSCRIBE', 'sunsubscribe']) {
      expect(dbStatementSerializer(command, [channel])).toBe(
        `${command} redisson_lock__channel:{order:42}:[owner]`,
      );
    }
    // A Redisson reader's fence key; core's owners have the same shape (`[<locker id>:]<uuid>:<n>`).
    expect(dbStatementSerializer('del', [`{order:42}:${OWNER}:rwlock_fence`, `billing:${OWNER}`])).toBe(
      'del {order:42}:[owner]:rwlock_fence billing:[owner]',
    );
  });

  it('shows every other command as the instrumentation does by default', () => {
    const commands: [string, unknown[]][] = [
      ['get', ['k']],
      ['set', ['k', 'secret-value', 'PX', 100]],
      ['setex', ['k', 10, 'secret-value']],
      ['hset', ['h', 'f', 'secret-value']],
      ['hget', ['h', OWNER]],
      ['hmget', ['h', 'fence', 'value']],
      ['hincrby', ['h', 'f', 1]],
      ['publish', ['channel', 'secret-message']],
      ['spublish', ['channel', 'secret-message']],
      ['psetex', ['k', 10, 'v']],
      ['pexpire', ['k', 100]],
      ['pttl', ['k']],
      ['del', ['a', 'b']],
      ['echo', ['hello']],
      ['auth', ['password']],
      ['acl', ['SETUSER', 'bob', '>password']],
      ['config', ['SET', 'requirepass', 'password']],
      ['subscribe', ['a', 'b']],
      ['ssubscribe', ['a']],
      ['wait', [1, 100]],
      ['info', ['replication']],
      ['incr', ['k']],
      ['zadd', ['z', 1, 'member']],
      ['xadd', ['s', '*', 'f', 'v']],
      ['lpush', ['l', 'v']],
      ['ping', []],
      ['multi', []],
      ['mset', ['a', '1', 'b', '2']],
      ['getset', ['k', 'v']],
      ['blpop', ['l', 0]],
      ['sadd', ['s', 'm']],
      ['geoadd', ['g', 1, 2, 'm']],
      ['linsert', ['l', 'BEFORE', 'p', 'v']],
      ['pfadd', ['h', 'a']],
      ['xack', ['s', 'g', 'id']],
      ['memory', ['USAGE', 'k']],
      ['client', ['SETNAME', 'n']],
      ['rpop', ['l']],
    ];
    for (const [command, args] of commands) {
      expect(dbStatementSerializer(command, args), command).toBe(
        defaultDbStatementSerializer(command, [...args]),
      );
    }
  });
});
