import { type ProxiedClient, proxiedClient, type RedisMasters, startMasters } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { QuorumError } from '../../src/errors.js';
import type { ReleaseReply } from '../../src/protocol.js';
import type { NodeOutcome } from '../../src/redlock/fan-out.js';
import { createRedlock } from '../../src/redlock/index.js';
import { type QuorumContext, resolveQuorumOptions } from '../../src/redlock/options.js';
import { REMEMBERED_RELEASES, releaseAttempt } from '../../src/redlock/release-attempts.js';
import { freshKey, ownersOn } from './support.js';

// A release that rejected because masters were silent may land on them later. The README
// promises that its retry (same release id) then answers `released`, as on one server, and only
// then: not when what freed the key on a majority was something other than that release.
let masters: RedisMasters;
let clients: Redis[];
beforeAll(async () => {
  masters = await startMasters(3);
  clients = masters.clients();
  // Scripts loaded on every master: a silent master answering NOSCRIPT would get the release again.
  const warm = createRedlock({ clients });
  await (await warm.acquire('warm-up', { ttl: 1_000 })).release();
  await warm.close();
});
afterEach(() => {
  for (const server of masters.servers) if (server.paused) server.resume();
});
afterAll(async () => {
  await masters.stop();
});

const held = (owner: string) => [owner, owner, owner];

it('answers released on retry when the rejected release landed late on a majority', async () => {
  const locker = createRedlock({ clients, nodeTimeout: 200, prefix: '' });
  const key = freshKey('release-late');
  const handle = await locker.acquire(key, { ttl: 30_000 });
  expect(await ownersOn(clients, key)).toEqual(held(handle.owner));
  const silent = masters.servers.slice(1);
  for (const server of silent) server.pause();
  await expect(handle.release()).rejects.toBeInstanceOf(QuorumError);
  expect(await ownersOn(clients.slice(0, 1), key)).toEqual([null]);
  for (const server of silent) server.resume();
  // Read on the same connections, so the late replies of the queued release were read first.
  expect(await ownersOn(clients, key)).toEqual([null, null, null]);
  expect(await handle.release()).toBe('released');
  await locker.close();
});

it('answers not-owner on retry when the rejected release never ran on a majority', async () => {
  // Masters 1 and 2 through proxies that hold the release, then drop it unsent (not resent).
  const proxied: ProxiedClient[] = await Promise.all(
    masters.servers
      .slice(1)
      .map((server) => proxiedClient(server, { redis: { autoResendUnfulfilledCommands: false } })),
  );
  try {
    const through = [clients[0]!, ...proxied.map((each) => each.redis)];
    const locker = createRedlock({ clients: through, nodeTimeout: 200, prefix: '' });
    const key = freshKey('release-lost');
    const handle = await locker.acquire(key, { ttl: 30_000 });
    expect(await ownersOn(clients, key)).toEqual(held(handle.owner));
    for (const { proxy } of proxied) proxy.blackhole();
    await expect(handle.release()).rejects.toBeInstanceOf(QuorumError);
    for (const { proxy } of proxied) proxy.drop();
    // The key goes there by other means (its lease ending), not by this release.
    for (const client of clients.slice(1)) await client.del(`{${key}}`);
    expect(await ownersOn(clients, key)).toEqual([null, null, null]);
    for (const { proxy } of proxied) proxy.pass();
    await Promise.all(through.map((client) => client.ping()));
    expect(await handle.release()).toBe('not-owner');
    await locker.close();
  } finally {
    await Promise.all(proxied.map((each) => each.close()));
  }
});

describe('what a release remembers for its retries', () => {
  const ok = (value: ReleaseReply): NodeOutcome<ReleaseReply> => ({ kind: 'ok', value });
  const timedOut: NodeOutcome<ReleaseReply> = { kind: 'timed-out' };
  const nobody = [ok('not-owner'), ok('not-owner'), ok('not-owner')];
  /** A retry's answers after `undecided`: masters 0 and 1 freed by it. */
  const freedByIt = [ok('released'), ok('released'), ok('not-owner')];
  /** An undecided attempt of `id` that freed master 0 in time and master 1 late. */
  const undecided = (context: QuorumContext, id: string) => {
    const attempt = releaseAttempt(context, id);
    attempt.merge([ok('released'), timedOut, timedOut]);
    attempt.late(1, 'released');
  };

  it('counts the masters an undecided attempt freed, until a retry decides', () => {
    const context = resolveQuorumOptions({ clients });
    undecided(context, 'r');
    const retry = releaseAttempt(context, 'r');
    expect(retry.merge(nobody)).toEqual(freedByIt);
    retry.forget();
    expect(releaseAttempt(context, 'r').merge(nobody)).toEqual(nobody);
  });

  it('keeps them per id, per backend, and for the last undecided releases only', () => {
    const context = resolveQuorumOptions({ clients });
    undecided(context, 'oldest');
    undecided(context, 'kept');
    expect(releaseAttempt(resolveQuorumOptions({ clients }), 'kept').merge(nobody)).toEqual(nobody);
    expect(releaseAttempt(context, 'other').merge(nobody)).toEqual(nobody);
    // With `other`, one more undecided release than are remembered: `oldest` is pushed out.
    for (let index = 0; index < REMEMBERED_RELEASES - 2; index++) releaseAttempt(context, `later-${index}`);
    expect(releaseAttempt(context, 'kept').merge(nobody)).toEqual(freedByIt);
    expect(releaseAttempt(context, 'oldest').merge(nobody)).toEqual(nobody);
  });

  it('keeps nothing for a release without an id', () => {
    const context = resolveQuorumOptions({ clients });
    const first = releaseAttempt(context, undefined);
    first.merge([ok('released'), timedOut, timedOut]);
    first.late(1, 'released');
    expect(releaseAttempt(context, undefined).merge(nobody)).toEqual(nobody);
  });
});
