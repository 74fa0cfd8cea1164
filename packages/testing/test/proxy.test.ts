import { type AddressInfo, connect, createServer, type Server } from 'node:net';
import { Redis, type RedisOptions } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { startProxy, type TcpProxy, waitFor } from '../src/index.js';
import { useRedis } from '../src/vitest/index.js';

/** A proxy for the running test, stopped when it finishes. */
async function proxyFor(
  target: { host: string; port: number },
  cleanup: (stop: () => Promise<void>) => void,
) {
  const proxy = await startProxy({ target });
  cleanup(() => proxy.stop());
  return proxy;
}

/** Clients made by the running test: disconnected after it, or one left reconnecting to a stopped proxy keeps timers and sockets alive into the next test. */
const made = new Set<Redis>();
afterEach(() => {
  for (const client of made) client.disconnect();
  made.clear();
});

function clientOf(proxy: TcpProxy, options: RedisOptions = {}): Redis {
  const client = new Redis({ ...proxy.redisOptions, ...options });
  client.on('error', () => {});
  made.add(client);
  return client;
}

async function elapsed(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

/** Sends an inline PING on a fresh socket: the reply, or 'reset' when the connection was reset. */
function rawPing(proxy: TcpProxy): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: proxy.host, port: proxy.port });
    socket.once('error', () => resolve('reset'));
    socket.once('data', (data) => {
      resolve(data.toString());
      socket.destroy();
    });
    socket.write('PING\r\n');
  });
}

/** Names and counts of the resources keeping this process alive (sockets, servers, timers). */
function resources(): Map<string, number> {
  const counts = new Map<string, number>();
  for (const name of process.getActiveResourcesInfo()) counts.set(name, (counts.get(name) ?? 0) + 1);
  return counts;
}

describe('startProxy', () => {
  it('passes commands through to the target and counts its connections', async ({ onTestFinished }) => {
    const server = await useRedis();
    const proxy = await proxyFor(server, onTestFinished);
    expect(proxy.host).toBe('127.0.0.1');
    expect(proxy.port).not.toBe(server.port);
    const client = clientOf(proxy);
    await client.set('through', 'proxy');
    expect(await server.client().get('through')).toBe('proxy');
    expect(proxy.connections).toBe(1);
    client.disconnect();
    await waitFor('the proxy to see the client go', async () => proxy.connections === 0, { timeout: 2_000 });
  });

  it('delays each direction by its own amount and keeps replies in order', async ({ onTestFinished }) => {
    const server = await useRedis();
    const proxy = await proxyFor(server, onTestFinished);
    const client = clientOf(proxy);
    await client.ping();
    proxy.delay({ upstream: 200 });
    expect(await elapsed(() => client.ping())).toBeGreaterThanOrEqual(199);
    proxy.delay({ downstream: 200 });
    expect(await elapsed(() => client.ping())).toBeGreaterThanOrEqual(199);
    proxy.delay(150);
    expect(proxy.mode).toEqual({ kind: 'delay', upstream: 150, downstream: 150 });
    const pipeline = client.pipeline();
    for (let i = 0; i < 200; i++) pipeline.incr('order');
    const replies = await pipeline.exec();
    expect(replies!.map(([, value]) => value)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    proxy.pass();
    await client.ping();
    client.disconnect();
  });

  it('pass forwards at once the bytes an earlier delay still holds, in order', async ({ onTestFinished }) => {
    const server = await useRedis();
    const proxy = await proxyFor(server, onTestFinished);
    const client = clientOf(proxy);
    await client.ping();
    proxy.delay({ downstream: 60_000 });
    const answered: string[] = [];
    const held = Promise.all([
      client.incr('held').then((value) => answered.push(`incr ${value}`)),
      client.get('held').then((value) => answered.push(`get ${value}`)),
    ]);
    const direct = server.client();
    await waitFor('both commands to reach the server', async () => (await direct.get('held')) === '1', {
      timeout: 2_000,
    });
    expect(answered).toEqual([]);
    proxy.pass();
    await held;
    expect(answered).toEqual(['incr 1', 'get 1']);
    direct.disconnect();
    client.disconnect();
  });

  it('drop closes open connections and every new one until the mode changes', async ({ onTestFinished }) => {
    const server = await useRedis();
    const proxy = await proxyFor(server, onTestFinished);
    const client = clientOf(proxy, { retryStrategy: () => null, maxRetriesPerRequest: 0 });
    await client.ping();
    const ended = new Promise((resolve) => client.once('end', resolve));
    proxy.drop();
    await ended;
    expect(proxy.connections).toBe(0);
    const raw = connect({ host: proxy.host, port: proxy.port });
    raw.on('error', () => {});
    await new Promise((resolve) => raw.once('close', resolve));
    proxy.pass();
    const again = clientOf(proxy);
    expect(await again.ping()).toBe('PONG');
    again.disconnect();
  });

  it('drop() after a blackhole discards what it held: the server never runs the request', async ({
    onTestFinished,
  }) => {
    const server = await useRedis();
    const direct = server.client();
    const proxy = await proxyFor(server, onTestFinished);
    const client = clientOf(proxy, {
      connectionName: 'partitioned',
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
    });
    await client.ping();
    proxy.blackhole();
    const acquire = client.set('lock:a', 'me', 'PX', 30_000, 'NX');
    // The SET was in the proxy's socket before the first PING left; one more round trip later the
    // proxy has read it into what the blackhole holds.
    await direct.ping();
    await direct.ping();
    proxy.drop();
    await expect(acquire).rejects.toThrow(/Connection is closed/);
    // Redis runs what a connection sent before it notices the close, so once the connection is gone
    // from its list, a forwarded SET would have run.
    await waitFor(
      'the server to see the proxied connection close',
      async () => !String(await direct.call('CLIENT', 'LIST')).includes('name=partitioned'),
      { timeout: 5_000 },
    );
    expect(await direct.exists('lock:a')).toBe(0);
  });

  it('a clean close reaches a slow reader after every byte sent before it', async ({ onTestFinished }) => {
    const size = 16 * 1024 * 1024;
    let targetClosed!: () => void;
    const targetDone = new Promise<void>((resolve) => {
      targetClosed = resolve;
    });
    // Answers a request, once it is complete (FIN), with a large reply and its own FIN.
    const target = createServer({ allowHalfOpen: true }, (socket) => {
      socket.on('error', () => {});
      socket.on('close', () => targetClosed());
      socket.resume();
      socket.once('end', () => socket.end(Buffer.alloc(size, 1)));
    });
    await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => target.close(() => resolve())));
    const proxy = await proxyFor(
      { host: '127.0.0.1', port: (target.address() as AddressInfo).port },
      onTestFinished,
    );
    const reader = connect({ host: proxy.host, port: proxy.port, allowHalfOpen: true });
    let received = 0;
    let failure: string | undefined;
    reader.on('data', (chunk: Buffer) => {
      received += chunk.length;
    });
    reader.on('error', (error) => {
      failure = error.message;
    });
    reader.pause();
    reader.end('request');
    const closed = new Promise((resolve) => reader.once('close', resolve));
    // The target has written everything and closed: the proxy holds most of the reply, unread.
    await targetDone;
    reader.resume();
    await closed;
    expect({ received, failure }).toEqual({ received: size, failure: undefined });
  });

  it('blackhole keeps the connection open and forwards nothing, then delivers what it held', async ({
    onTestFinished,
  }) => {
    const server = await useRedis();
    const direct = server.client();
    const proxy = await proxyFor(server, onTestFinished);
    const client = clientOf(proxy, { commandTimeout: 300, maxRetriesPerRequest: 0 });
    await client.ping();
    proxy.blackhole();
    await expect(client.set('held', 'late')).rejects.toThrow(/timed out/i);
    expect(proxy.connections).toBe(1);
    expect(await direct.exists('held')).toBe(0);
    proxy.pass();
    await waitFor('the held SET to reach the server', async () => (await direct.get('held')) === 'late', {
      timeout: 2_000,
    });
    client.disconnect();
  });

  it('a server that closes during a blackhole is not seen closing until the partition heals', async ({
    onTestFinished,
  }) => {
    const server = await useRedis();
    const direct = server.client();
    const proxy = await proxyFor(server, onTestFinished);
    const client = clientOf(proxy, { retryStrategy: () => null, maxRetriesPerRequest: 0 });
    await client.ping();
    // A control through a proxy left in pass mode, connected second so that the kill closes it second.
    const control = clientOf(await proxyFor(server, onTestFinished), {
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
    });
    await control.ping();
    let closed = false;
    client.once('close', () => {
      closed = true;
    });
    const controlClosed = new Promise((resolve) => control.once('close', resolve));
    proxy.blackhole();
    await direct.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    // Both proxies run in this process and each step of the close reaches the blackholed one first:
    // once the control has seen its close, and one more round trip later, a leaked close would have too.
    await controlClosed;
    await direct.ping();
    expect(closed).toBe(false);
    expect(proxy.connections).toBe(1);
    proxy.pass();
    await waitFor('the client to see the close', async () => closed, { timeout: 2_000 });
  });

  it('resetAfter(0) lets the request reach the server and resets before the reply', async ({
    onTestFinished,
  }) => {
    const server = await useRedis();
    const direct = server.client();
    const proxy = await proxyFor(server, onTestFinished);
    const client = clientOf(proxy, { retryStrategy: () => null, maxRetriesPerRequest: 0 });
    await client.ping();
    proxy.resetAfter(0);
    await expect(client.set('applied', 'yes')).rejects.toThrow(/ECONNRESET|Connection is closed/);
    expect(await direct.get('applied')).toBe('yes');
    expect(proxy.connections).toBe(0);
    expect(proxy.resets).toBe(1);
  });

  it('resetAfter(n, direction, times) returns to pass after that many resets', async ({ onTestFinished }) => {
    const server = await useRedis();
    const proxy = await proxyFor(server, onTestFinished);
    proxy.resetAfter(0, 'downstream', 2);
    expect(await rawPing(proxy)).toBe('reset');
    expect(await rawPing(proxy)).toBe('reset');
    expect(proxy.mode).toEqual({ kind: 'pass' });
    expect(await rawPing(proxy)).toBe('+PONG\r\n');
    expect(proxy.resets).toBe(2);
  });

  it('resetAfter(n, upstream) forwards exactly n request bytes on each connection', async ({
    onTestFinished,
  }) => {
    const server = await useRedis();
    const direct = server.client();
    const proxy = await proxyFor(server, onTestFinished);
    const client = clientOf(proxy, {
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      enableReadyCheck: false,
    });
    await client.ping();
    const first = Buffer.from('*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n');
    proxy.resetAfter(first.length, 'upstream');
    const replies = await client.pipeline().set('a', '1').set('b', '2').exec();
    expect(replies!.map(([error]) => error?.message)).toEqual([
      'Connection is closed.',
      'Connection is closed.',
    ]);
    await waitFor('the first SET', async () => (await direct.get('a')) === '1', { timeout: 2_000 });
    expect(await direct.exists('b')).toBe(0);
  });

  it('refuses bad settings by name', async ({ onTestFinished }) => {
    const server = await useRedis();
    const proxy = await proxyFor(server, onTestFinished);
    expect(() => proxy.delay(-1)).toThrow(new RangeError('delay upstream must be an integer >= 0, got -1'));
    expect(() => proxy.delay({ downstream: 1.5 })).toThrow(
      'delay downstream must be an integer >= 0, got 1.5',
    );
    expect(() => proxy.resetAfter(Number.NaN)).toThrow('bytes must be an integer >= 0, got NaN');
    expect(() => proxy.resetAfter(1, 'sideways' as 'upstream')).toThrow('got sideways');
    expect(() => proxy.resetAfter(1, 'upstream', 0)).toThrow('times must be an integer >= 1, got 0');
    await expect(startProxy({ target: { host: 'x' } as never })).rejects.toThrow(/target must be/);
    // Up front, not at the first connection, where net.connect would throw it out of the accept handler.
    for (const port of [0, 65_536]) {
      await expect(startProxy({ target: { host: '127.0.0.1', port } })).rejects.toThrow(
        `target must be { host, port } with a port from 1 to 65535, got {"host":"127.0.0.1","port":${port}}`,
      );
    }
  });

  it('a listener failing after it listened is thrown by the next switch and stop(), not as an uncaught exception', async () => {
    const server = await useRedis();
    const proxy = await startProxy({ target: server });
    expect(await clientOf(proxy).ping()).toBe('PONG');
    // No accept error can be provoked at will (libuv absorbs EMFILE), so the listener is handed
    // one the way Node emits it.
    const listener = (proxy as unknown as { server: Server }).server;
    listener.emit('error', Object.assign(new Error('accept ENFILE'), { code: 'ENFILE', syscall: 'accept' }));
    const failure = `proxy on port ${proxy.port} stopped accepting: accept ENFILE`;
    expect(() => proxy.delay(10)).toThrow(failure);
    const attempt = await new Promise<string>((resolve) => {
      const socket = connect({ host: proxy.host, port: proxy.port });
      socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
      socket.once('connect', () => {
        socket.destroy();
        resolve('connected');
      });
    });
    expect(attempt).toBe('ECONNREFUSED');
    await expect(proxy.stop()).rejects.toThrow(failure);
    await expect(proxy.stop()).rejects.toThrow(failure);
  });

  it('a reset counted after the listener failed ends its mode without throwing from the connection', async () => {
    const server = await useRedis();
    const proxy = await startProxy({ target: server });
    const client = clientOf(proxy, { retryStrategy: () => null, autoResendUnfulfilledCommands: false });
    expect(await client.ping()).toBe('PONG');
    proxy.resetAfter(0, 'downstream', 1);
    const listener = (proxy as unknown as { server: Server }).server;
    listener.emit('error', Object.assign(new Error('accept ENFILE'), { code: 'ENFILE', syscall: 'accept' }));
    const uncaught: unknown[] = [];
    const record = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', record);
    try {
      // The reply is the byte that resets the connection, the last of the mode's one reset.
      expect(await client.ping().catch((error: Error) => error.message)).not.toBe('PONG');
      await waitFor('the reset counted', async () => proxy.resets === 1);
    } finally {
      process.off('uncaughtException', record);
    }
    expect(uncaught).toEqual([]);
    client.disconnect();
    await expect(proxy.stop()).rejects.toThrow('stopped accepting');
  });

  it('stop() closes every socket and timer it made, and may be called twice', async () => {
    const server = await useRedis();
    const before = resources();
    const proxy = await startProxy({ target: server });
    const clients = [clientOf(proxy), clientOf(proxy), clientOf(proxy)];
    await Promise.all(clients.map((client) => client.ping()));
    proxy.delay(5_000);
    const pending = clients.map((client) => client.ping().catch(() => 'failed'));
    await proxy.stop();
    await proxy.stop();
    for (const client of clients) client.disconnect();
    expect(await Promise.all(pending)).toEqual(['failed', 'failed', 'failed']);
    expect(() => proxy.pass()).toThrow(/stopped/);
    await waitFor(
      'resources to return to what they were',
      async () => {
        const after = resources();
        return ['TCPServerWrap', 'TCPSocketWrap', 'Timeout'].every(
          (name) => (after.get(name) ?? 0) <= (before.get(name) ?? 0),
        );
      },
      { timeout: 2_000 },
    );
  });
});
