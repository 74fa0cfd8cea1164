import { createLocker } from '@lock/core';
import { freePort, type RedisServer, startRedis } from '@lock/testing';
import { Redis, type RedisOptions } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Certificates, makeCertificates } from './support/certificates.js';

const PASSWORD = 'tls-Pa55word-0921';

let certificates: Certificates;
let server: RedisServer;
let tlsPort: number;
beforeAll(async () => {
  certificates = makeCertificates();
  tlsPort = await freePort();
  // The plain port stays for the harness only (it reads what the TLS clients wrote).
  server = await startRedis({
    config: {
      'tls-port': tlsPort,
      'tls-cert-file': certificates.serverCert,
      'tls-key-file': certificates.serverKey,
      'tls-ca-cert-file': certificates.ca,
      'tls-auth-clients': 'no',
      requirepass: PASSWORD,
    },
  });
  return async () => {
    await server.stop();
    certificates.remove();
  };
});

function client(options: RedisOptions): Redis {
  const redis = new Redis({
    host: '127.0.0.1',
    port: tlsPort,
    password: PASSWORD,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    ...options,
  });
  redis.on('error', () => {});
  return redis;
}

/** Tries one lock over `redis`: 'locked', or the error's name and message. */
async function tryLock(redis: Redis, key: string): Promise<string> {
  const locker = createLocker({ redis, replication: false });
  try {
    const lock = await locker.acquire(key, { ttl: 5_000, wait: 0 });
    await lock.release();
    return 'locked';
  } catch (error) {
    return `${(error as Error).name}: ${(error as Error).message}`;
  } finally {
    await locker.close();
    redis.disconnect();
  }
}

describe('S28: TLS with the deployment’s own CA (and a password)', () => {
  it('locks over TLS when the client trusts that CA', async () => {
    expect(await tryLock(client({ tls: { ca: certificates.caPem } }), 'tls:ok')).toBe('locked');
  });

  it('fails closed with a CA that did not sign the server certificate: nothing written, no secret shown', async () => {
    const admin = server.client({ password: PASSWORD });
    const before = await admin.dbsize();
    const outcome = await tryLock(client({ tls: { ca: certificates.otherCaPem } }), 'tls:wrong-ca');
    expect(outcome).not.toBe('locked');
    expect(outcome).not.toContain(PASSWORD);
    expect(await admin.dbsize()).toBe(before);
  });

  it('a plaintext client on the TLS port gets no lock and nothing is written (no silent fallback)', async () => {
    const admin = server.client({ password: PASSWORD });
    const before = await admin.dbsize();
    const outcome = await tryLock(client({}), 'tls:plain');
    expect(outcome).not.toBe('locked');
    expect(await admin.dbsize()).toBe(before);
    expect(await admin.exists('{lock:tls:plain}')).toBe(0);
  });
});
