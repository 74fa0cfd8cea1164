import { once } from 'node:events';
import type { IncomingHttpHeaders } from 'node:http';
import http2, { type ClientHttp2Session, type Http2ServerResponse } from 'node:http2';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Locker } from '@lock/core';
import { waitFor } from '@lock/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { checkCommonOptions, createGate } from '../src/http/index.js';
import { lock } from '../src/index.js';
import { expressVersions } from './express-adapter.js';
import { gateAdapter } from './gate-adapter.js';
import { useLockFixture } from './support/fixture.js';
import {
  closeH2,
  type H2Listener,
  type H2Server,
  h2c,
  h2Get,
  listenH2,
  selfSignedCertificate,
} from './support/h2.js';
import { describeH2LockMiddleware } from './support/h2-suite.js';
import { Gate } from './support/recorder.js';

describeH2LockMiddleware(gateAdapter);

describe('The shared HTTP layer on node:http2, given no request', () => {
  let locker!: Locker;
  useLockFixture((fixture) => {
    ({ locker } = fixture);
  });
  let server: H2Server | undefined;
  let session: ClientHttp2Session | undefined;
  afterEach(async () => {
    session?.destroy();
    if (server) await closeH2(server);
  });

  it('takes no lock for a response whose stream closed before the gate ran', async () => {
    // `closed` is what tells a closed node:http response; node:http2's compat response lacks it.
    const gate = createGate(checkCommonOptions({ locker, key: 'order:1' }, []), () => ({}));
    let given!: (res: Http2ServerResponse) => void;
    const response = new Promise<Http2ServerResponse>((resolve) => {
      given = resolve;
    });
    server = await listenH2(h2c.createServer((_req, res) => given(res)));
    session = h2c.connect(server);
    const request = h2Get(session, '/');
    const res = await response;
    const closed = once(res, 'close');
    request.cancel();
    await closed;
    let ran = false;
    const outcome = await gate({}, res, () => {
      ran = true;
    });
    expect([outcome.kind, ran, await locker.isLocked('order:1')]).toEqual(['gone', false, false]);
  });
});

/** A GET over HTTP/1.1 and TLS, trusting `ca`. */
function getOverTls(
  server: H2Server,
  path: string,
  ca: string,
): Promise<{ status: number | undefined; headers: IncomingHttpHeaders; body: string }> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    https
      .get({ host: '127.0.0.1', port, path, ca, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.once('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
      })
      .once('error', reject);
  });
}

for (const version of expressVersions) {
  describe(`${version.name} on a node:http2 server`, () => {
    let locker!: Locker;
    useLockFixture((fixture) => {
      ({ locker } = fixture);
    });
    let server: H2Server | undefined;
    afterEach(async () => {
      if (server) await closeH2(server);
    });

    it('locks the HTTP/1.1 requests that createSecureServer({ allowHTTP1: true }) hands it', async () => {
      const certificate = selfSignedCertificate();
      const inside = new Gate();
      const entered = new Gate();
      const app = version.express();
      app.get('/orders/:id', lock({ locker, key: 'order:{params.id}', wait: 0 }), async (req, res, next) => {
        entered.open();
        await inside.pass().then(() => res.json({ httpVersion: req.httpVersion, key: req.lock?.key }), next);
      });
      // node:http2 hands HTTP/1.1 connections node:http's request and response: Express runs on those.
      server = await listenH2(
        http2.createSecureServer({ ...certificate, allowHTTP1: true }, app as unknown as H2Listener),
      );
      const holding = getOverTls(server, '/orders/1', certificate.cert);
      await entered.pass();
      const busy = await getOverTls(server, '/orders/1', certificate.cert);
      inside.open();
      expect([busy.status, busy.headers['retry-after'], busy.headers['content-type']]).toEqual([
        409,
        expect.stringMatching(/^\d+$/),
        'application/problem+json',
      ]);
      expect(await holding).toMatchObject({ status: 200, body: '{"httpVersion":"1.1","key":"order:1"}' });
      await waitFor('order:1 to be free', async () => !(await locker.isLocked('order:1')), {
        timeout: 5_000,
        interval: 10,
      });
    });
  });
}
