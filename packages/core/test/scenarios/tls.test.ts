import { createLocker, DEFAULT_COMMAND_TIMEOUT } from '@lock/core';
import { freePort, type RedisServer, startRedis } from '@lock/testing';
import { Redis, type RedisOptions } from 'ioredis';
import { beforeAll, describe, expect, it } from 'vitest';
import { type Certificates, makeCertificates } from './support/certificates.js';
import { reportFigures } from './support/figures.js';

const PASSWORD = 'tls-Pa55word-0921';

let certificates: Certificates;
let server: RedisServer;
let tlsPort: number;

/**
 * A password-protected server with a TLS port signed by the deployment's CA, asking clients for
 * a certificate of that CA or not. The plain port stays for the harness only (it reads what the
 * TLS clients wrote).
 */
async function startTlsServer(authClients: 'yes' | 'no'): Promise<{ server: RedisServer; port: number }> {
  const port = await freePort();
  const started = await startRedis({
    config: {
      'tls-port': port,
      'tls-cert-file': certificates.serverCert,
      'tls-key-file': certificates.serverKey,
      'tls-ca-cert-file': certificates.ca,
      'tls-auth-clients': authClients,
      requirepass: PASSWORD,
    },
  });
  return { server: started, port };
}

beforeAll(async () => {
  certificates = makeCertificates();
  ({ server, port: tlsPort } = await startTlsServer('no'));
  return async () => {
    await server.stop();
    certificates.remove();
  };
});

function client(options: RedisOptions, port = tlsPort): Redis {
  const redis = new Redis({
    host: '127.0.0.1',
    port,
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
    const redis = client({ tls: { ca: certificates.otherCaPem } });
    // The locker's error says only that Redis was unreachable: the refused handshake is reported
    // on the client's error events.
    const connectionErrors: NodeJS.ErrnoException[] = [];
    redis.on('error', (error: NodeJS.ErrnoException) => connectionErrors.push(error));
    const outcome = await tryLock(redis, 'tls:wrong-ca');
    expect(outcome).toMatch(/^LockUnavailableError: .*"tls:wrong-ca"/);
    // Refused because the server's certificate does not verify against that CA, not for any other
    // reason (a refused connection, a protocol error, a bad password): Node's code for a chain
    // ending in a CA it does not trust (the server sends its CA along) or for a leaf alone.
    const verification = connectionErrors.filter(({ code }) =>
      ['SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'].includes(code ?? ''),
    );
    expect(verification, String(connectionErrors)).not.toEqual([]);
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

/** Everything an error shows: name, message, stack, own fields, and the same for its causes. */
function everythingIn(error: unknown, depth = 0): string {
  if (!(error instanceof Error) || depth > 5) return String(error);
  return [
    error.name,
    error.message,
    error.stack ?? '',
    JSON.stringify(error),
    everythingIn(error.cause, depth + 1),
  ].join('\n');
}

describe('S28: TLS client certificates (tls-auth-clients yes)', () => {
  let authServer: RedisServer;
  let authPort: number;
  beforeAll(async () => {
    ({ server: authServer, port: authPort } = await startTlsServer('yes'));
    return () => authServer.stop();
  });

  /**
   * Tries one lock as the TLS client `tls` (the server's CA trusted, so only the client's own
   * certificate decides), with ioredis failing fast (`fast`) or with its defaults (reconnect
   * forever, offline queue: only the locker's command timeout bounds the wait). Returns the
   * outcome, how long it took, and whether anything was written.
   */
  async function attempt(tls: RedisOptions['tls'], fast: boolean, key: string) {
    const admin = authServer.client({ password: PASSWORD });
    const before = await admin.dbsize();
    const redis = fast
      ? client({ tls }, authPort)
      : new Redis({ host: '127.0.0.1', port: authPort, password: PASSWORD, tls });
    redis.on('error', () => {});
    const locker = createLocker({ redis, replication: false });
    const started = performance.now();
    const outcome = await locker.acquire(key, { ttl: 5_000, wait: 0 }).then(
      async (lock) => {
        await lock.release();
        return 'locked' as const;
      },
      (error: unknown) => error as Error,
    );
    const ms = performance.now() - started;
    await locker.close();
    redis.disconnect();
    return {
      outcome,
      ms,
      written: (await admin.dbsize()) - before,
      held: await admin.exists(`{lock:${key}}`),
    };
  }

  it('locks with a client certificate the deployment’s CA signed', async () => {
    const { outcome } = await attempt({ ca: certificates.caPem, ...certificates.client }, true, 'mtls:ok');
    expect(outcome).toBe('locked');
  });

  const refusals = [
    { name: 'without a client certificate', tls: () => ({ ca: certificates.caPem }) },
    {
      name: 'with a client certificate another CA signed',
      tls: () => ({ ca: certificates.caPem, ...certificates.otherClient }),
    },
  ];
  describe.each(refusals)('$name', ({ name, tls }) => {
    it.each([
      { client: 'failing fast', fast: true },
      { client: 'ioredis defaults (reconnecting)', fast: false },
    ])(
      'fails closed ($client): nothing written, an error within the bound, no secret',
      async ({ client: mode, fast }) => {
        const key = `mtls:${fast ? 'fast' : 'default'}`;
        const { outcome, ms, written, held } = await attempt(tls(), fast, key);
        expect(outcome).toBeInstanceOf(Error);
        const error = outcome as Error;
        // The locker's error naming the lock (the refused handshake is its cause); never a lock, never a hang.
        expect(error.name).toBe('LockUnavailableError');
        expect(error.message).toContain(`"${key}"`);
        expect(everythingIn(error)).not.toContain(PASSWORD);
        // Failing fast, the closed connection ends the call; reconnecting, only the locker's command
        // timeout does (ioredis's own retries would take over 10 s): bounded with a generous slack.
        expect(error.cause).toMatchObject({ name: fast ? 'Error' : 'CommandTimeoutError' });
        expect(ms).toBeLessThan(DEFAULT_COMMAND_TIMEOUT + 5_000);
        expect(written).toBe(0);
        expect(held).toBe(0);
        reportFigures(`S28 mTLS ${name}, ${mode}`, {
          outcome: error.name,
          cause: String((error.cause as Error | undefined)?.message),
          ms,
        });
      },
    );
  });
});
