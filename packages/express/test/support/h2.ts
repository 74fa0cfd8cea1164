import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http2, {
  type ClientHttp2Session,
  type Http2SecureServer,
  type Http2Server,
  type Http2ServerRequest,
  type Http2ServerResponse,
  type Http2Session,
  type IncomingHttpHeaders,
} from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A node:http2 server, cleartext (h2c) or over TLS. */
export type H2Server = Http2Server | Http2SecureServer;

/** What node:http2's compatibility API calls for each request. */
export type H2Listener = (req: Http2ServerRequest, res: Http2ServerResponse) => unknown;

/** A PEM certificate and its key. */
export interface Certificate {
  readonly cert: string;
  readonly key: string;
}

/** A throwaway self-signed certificate for 127.0.0.1, made with openssl (as core's TLS tests do). */
export function selfSignedCertificate(): Certificate {
  const dir = mkdtempSync(join(tmpdir(), 'lock-h2-'));
  try {
    // biome-ignore format: one openssl argument per pair reads best
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
    ], { stdio: 'pipe' });
    return {
      cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
      key: readFileSync(join(dir, 'key.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** How a test reaches its server: h2c, or h2 over TLS. */
export interface H2Transport {
  readonly name: string;
  createServer(listener: H2Listener): H2Server;
  connect(server: H2Server): ClientHttp2Session;
}

const origin = (scheme: string, server: H2Server) =>
  `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}`;

export const h2c: H2Transport = {
  name: 'h2c',
  createServer: (listener) => http2.createServer(listener),
  connect: (server) => http2.connect(origin('http', server)),
};

/** h2 over TLS; the certificate is made on first use. */
export function h2OverTls(): H2Transport {
  let certificate: Certificate | undefined;
  const made = () => {
    certificate ??= selfSignedCertificate();
    return certificate;
  };
  return {
    name: 'h2 over TLS',
    createServer: (listener) => http2.createSecureServer(made(), listener),
    connect: (server) => http2.connect(origin('https', server), { ca: made().cert }),
  };
}

const sessions = new WeakMap<H2Server, Set<Http2Session>>();

/** Listens on a free loopback port, keeping the sessions it accepts so that `closeH2` can end them. */
export async function listenH2<S extends H2Server>(server: S): Promise<S> {
  const open = new Set<Http2Session>();
  sessions.set(server, open);
  server.on('session', (session: Http2Session) => {
    open.add(session);
    session.once('close', () => open.delete(session));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return server;
}

/** Stops a server and the sessions it still has. */
export async function closeH2(server: H2Server): Promise<void> {
  const closed = new Promise((resolve) => server.close(resolve));
  for (const session of sessions.get(server) ?? []) session.destroy();
  await closed;
}

/** How a stream ended, as the client saw it. */
export interface H2Answer {
  readonly status: number | undefined;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /**
   * The RST_STREAM code the stream closed with: 0 (NO_ERROR) for a response that ended, and also
   * for a reset with NO_ERROR, which node:http2's client reads as the end of the body.
   */
  readonly rstCode: number;
}

/** One GET on a session. */
export interface H2Request {
  /** Settles once the stream closed, however it closed. */
  readonly answer: Promise<H2Answer>;
  /** Resolves with the first chunk of the body. */
  readonly firstChunk: Promise<string>;
  /** Resets the stream with CANCEL, as a browser does for a request it gave up. */
  cancel(): void;
}

export function h2Get(session: ClientHttp2Session, path: string): H2Request {
  const stream = session.request({ ':path': path });
  let headers: IncomingHttpHeaders = {};
  let body = '';
  let first!: (chunk: string) => void;
  const firstChunk = new Promise<string>((resolve) => {
    first = resolve;
  });
  stream.on('response', (received) => {
    headers = received;
  });
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => {
    first(chunk);
    body += chunk;
  });
  // A reset with an error code is told by `rstCode` on 'close'.
  stream.on('error', () => {});
  const answer = new Promise<H2Answer>((resolve) => {
    stream.once('close', () =>
      resolve({
        status: headers[':status'] as number | undefined,
        headers,
        body,
        rstCode: stream.rstCode ?? 0,
      }),
    );
  });
  stream.end();
  return { answer, firstChunk, cancel: () => stream.close(http2.constants.NGHTTP2_CANCEL) };
}
