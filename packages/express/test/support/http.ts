import { once } from 'node:events';
import http, { type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Listens on a free loopback port. */
export async function listen(server: Server): Promise<Server> {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

/** Stops a server and the keep-alive connections it still has. */
export async function close(server: Server): Promise<void> {
  const closed = new Promise((resolve) => server.close(resolve));
  server.closeAllConnections();
  await closed;
}

/** A raw GET that the test can abort at any point, unlike supertest's. */
export interface OpenRequest {
  /** Resolves with the first chunk of the body. */
  readonly firstChunk: Promise<string>;
  /** Resolves with the whole body once the last byte arrived. */
  readonly body: Promise<string>;
  /** Drops the connection, as a client that goes away does. */
  abort(): void;
}

export function openRequest(server: Server, path: string): OpenRequest {
  const { port } = server.address() as AddressInfo;
  const req = http.request({ host: '127.0.0.1', port, path, agent: false });
  let first!: (chunk: string) => void;
  const firstChunk = new Promise<string>((resolve) => {
    first = resolve;
  });
  const body = new Promise<string>((resolve, reject) => {
    req.once('error', reject);
    req.once('response', (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => {
        first(chunk.toString());
        text += chunk.toString();
      });
      res.once('end', () => resolve(text));
      res.once('error', reject);
    });
  });
  // An aborted request rejects this; tests that abort do not await it.
  body.catch(() => {});
  req.end();
  return { firstChunk, body, abort: () => req.destroy() };
}
