import { once } from 'node:events';
import { createLocker, LuaScript, ReplicationError } from '@lock/core';
import { type RedisServer, startRedis, waitFor } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callsBetween, commandCalls } from './faults/support/stats.js';

/**
 * A script followed up by a command of the caller's (the engine's WAIT for replicas) goes whole
 * (EVAL) until its connection has answered it: a WAIT behind an EVALSHA answered NOSCRIPT would
 * run for nothing and hold the EVAL sent next behind it, for up to its timeout with a replica
 * lagging. Once answered, the script goes by EVALSHA again: nothing is added to that path.
 */
let master: RedisServer;
let replica: RedisServer;
let admin: Redis;
beforeAll(async () => {
  master = await startRedis();
  replica = await startRedis({ config: { replicaof: `${master.host} ${master.port}` } });
  await waitFor('the replica to be in sync', async () =>
    (await replica.client().info('replication')).includes('master_link_status:up'),
  );
  admin = master.client();
});
afterAll(async () => {
  replica?.resume();
  await replica?.stop();
  await master?.stop();
});

let scripts = 0;
/** A script no server has seen yet: each test's own. */
function freshScript(): LuaScript {
  scripts += 1;
  return new LuaScript(`-- script ${scripts}\nreturn redis.call('INCR', KEYS[1])`);
}

/** What the master ran of EVAL, EVALSHA and WAIT while `fn` ran. */
async function sent(fn: () => Promise<void>): Promise<{ eval: number; evalsha: number; wait: number }> {
  const before = await commandCalls(admin);
  await fn();
  const after = await commandCalls(admin);
  const count = (name: string) => callsBetween(before, after, [name]);
  return { eval: count('eval'), evalsha: count('evalsha'), wait: count('wait') };
}

/** Runs `script` on `client` with a WAIT for the replica behind it, as the engine does, and waits for both. */
async function runWaited(script: LuaScript, client: Redis): Promise<void> {
  let waited: Promise<unknown> | undefined;
  await script.run(client, ['counter'], [], () => {
    waited = client.call('WAIT', 1, 10_000);
  });
  expect(await waited).toBe(1);
}

describe('LuaScript.run with a follow-up', () => {
  it('sends a script its connection has not answered whole, with one WAIT behind it; then by EVALSHA', async () => {
    const script = freshScript();
    const client = master.client();
    expect(await sent(() => runWaited(script, client))).toEqual({ eval: 1, evalsha: 0, wait: 1 });
    expect(await sent(() => runWaited(script, client))).toEqual({ eval: 0, evalsha: 1, wait: 1 });
  });

  it('sends the script whole again after a reconnect to a server that lost its scripts (a restart, a failover)', async () => {
    const script = freshScript();
    const client = master.client();
    await runWaited(script, client);
    expect(await sent(() => runWaited(script, client))).toEqual({ eval: 0, evalsha: 1, wait: 1 });
    const before = await client.client('ID');
    await admin.script('FLUSH');
    await admin.client('KILL', 'ID', String(before));
    await waitFor('the client to be connected again', async () => (await client.client('ID')) !== before);
    expect(client.status).toBe('ready');
    expect(await sent(() => runWaited(script, client))).toEqual({ eval: 1, evalsha: 0, wait: 1 });
  });

  it('sends the script whole when sent while the client reconnects (its offline queue writes it on the new connection)', async () => {
    const script = freshScript();
    // Reconnecting for a second: still so when the run is sent, however slow the host.
    const client = master.client({ retryStrategy: () => 1_000 });
    await runWaited(script, client);
    expect(await sent(() => runWaited(script, client))).toEqual({ eval: 0, evalsha: 1, wait: 1 });
    await admin.script('FLUSH');
    const closed = once(client, 'close');
    await admin.client('KILL', 'ID', String(await client.client('ID')));
    await closed;
    expect(client.status).not.toBe('ready');
    expect(await sent(() => runWaited(script, client))).toEqual({ eval: 1, evalsha: 0, wait: 1 });
  });

  it("forgets every script its connection answered once one is answered NOSCRIPT (the server's SCRIPT FLUSH)", async () => {
    const [first, second] = [freshScript(), freshScript()];
    const client = master.client();
    await runWaited(first, client);
    await runWaited(second, client);
    expect(await sent(() => runWaited(first, client))).toEqual({ eval: 0, evalsha: 1, wait: 1 });
    await admin.script('FLUSH');
    // Not followed up: a NOSCRIPT answer here costs no WAIT.
    await second.run(client, ['counter'], []);
    expect(await sent(() => runWaited(first, client))).toEqual({ eval: 1, evalsha: 0, wait: 1 });
  });
});

describe.each(['token', 'legacy'] as const)(
  '%s: an acquisition on a server without its scripts',
  (protocol) => {
    it('sends one WAIT, behind the script that ran, when the (frozen) replica confirms nothing', async () => {
      await admin.script('FLUSH');
      const locker = createLocker({
        redis: master.client(),
        protocol,
        replication: { replicas: 1, timeout: 200 },
      });
      replica.pause();
      try {
        let error: unknown;
        const counted = await sent(async () => {
          error = await locker.acquire(`cold-${protocol}`, { ttl: 10_000, wait: 0 }).catch((e: unknown) => e);
        });
        expect(error).toBeInstanceOf(ReplicationError);
        expect(counted.wait).toBe(1);
        expect((await locker.inspect(`cold-${protocol}`)).held).toBe(false);
      } finally {
        replica.resume();
        await locker.close();
      }
    });
  },
);
