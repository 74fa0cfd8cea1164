import { once } from 'node:events';
import http, { type Server } from 'node:http';
import net, { type AddressInfo } from 'node:net';

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

/** A raw keep-alive connection that sends requests pipelined, as an HTTP/1.1 client may. */
export interface PipelinedConnection {
  /** Everything the server sent so far. */
  received(): string;
  /** How many responses (status lines) arrived so far. */
  responses(): number;
  /** Sends one more GET on the same connection. */
  write(path: string): void;
  /** Drops the connection, as a client that goes away does. */
  destroy(): void;
}

/** Opens a connection and writes a GET for each path at once, without waiting for any answer. */
export async function pipeline(server: Server, paths: readonly string[]): Promise<PipelinedConnection> {
  const { port } = server.address() as AddressInfo;
  const socket = net.connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let text = '';
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString();
  });
  // The test drops the connection itself; a reset that follows is expected.
  socket.on('error', () => {});
  const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: test\r\n\r\n`;
  socket.write(paths.map(get).join(''));
  return {
    received: () => text,
    write: (path) => socket.write(get(path)),
    responses: () => text.match(/HTTP\/1\.1 \d{3} /g)?.length ?? 0,
    destroy: () => socket.destroy(),
  };
}

/**
 * Sends one GET and never reads the answer, as a slow or hostile client may: once the socket's
 * buffers are full, the server cannot write the rest of a large response. Returns what drops it.
 */
export async function unreadRequest(server: Server, path: string): Promise<() => void> {
  const { port } = server.address() as AddressInfo;
  const socket = net.connect({ port, host: '127.0.0.1' });
  await once(socket, 'connect');
  socket.pause();
  socket.on('error', () => {});
  socket.write(`GET ${path} HTTP/1.1\r\nHost: test\r\n\r\n`);
  return () => socket.destroy();
}

/** The server side of one accepted connection, and its 'close' listeners once Node had set it up. */
export interface AcceptedConnection {
  readonly socket: net.Socket;
  readonly baselineCloseListeners: number;
}

/** The server side of each connection `server` accepts from now on, in order. */
export function acceptedConnections(server: Server): AcceptedConnection[] {
  const accepted: AcceptedConnection[] = [];
  // Node's own connection listener was added when the server was made, so it has run by now.
  server.on('connection', (socket: net.Socket) =>
    accepted.push({ socket, baselineCloseListeners: socket.listenerCount('close') }),
  );
  return accepted;
}
