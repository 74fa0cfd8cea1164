import type { Server } from 'node:http';
import { createLocker, type Locker } from '@lock/core';
import { type RedisServer, startRedis } from '@lock/testing';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { close } from './http.js';

/** What `useLockFixture` hands a describe block once its redis-server is up. */
export interface LockFixture {
  readonly redisServer: RedisServer;
  readonly locker: Locker;
}

/**
 * A redis-server and a locker on it for one describe block (`assign` receives them), and the
 * HTTP servers its tests start: each passed to the returned `track` is closed after its test.
 */
export function useLockFixture(assign: (fixture: LockFixture) => void): (server: Server) => Server {
  let fixture: LockFixture | undefined;
  let servers: Server[] = [];
  beforeAll(async () => {
    const redisServer = await startRedis();
    fixture = { redisServer, locker: createLocker({ redis: redisServer.client() }) };
    assign(fixture);
  });
  afterAll(async () => {
    await fixture?.locker.close();
    await fixture?.redisServer.stop();
  });
  afterEach(async () => {
    await Promise.all(servers.map(close));
    servers = [];
  });
  return (server) => {
    servers.push(server);
    return server;
  };
}
