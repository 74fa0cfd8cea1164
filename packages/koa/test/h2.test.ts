import http2, { type ClientHttp2Session } from 'node:http2';
import { Readable } from 'node:stream';
import Router from '@koa/router';
import type { Locker } from '@lock/core';
import { waitFor } from '@lock/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { useLockFixture } from '../../express/test/support/fixture.js';
import { closeH2, type H2Server, h2c, h2Get, listenH2 } from '../../express/test/support/h2.js';
import { describeH2LockMiddleware } from '../../express/test/support/h2-suite.js';
import { lock } from '../src/index.js';
import { koaAdapter, koaVersions } from './koa-adapter.js';

for (const version of koaVersions) {
  describeH2LockMiddleware(koaAdapter(version));

  describe(`${version.name} over h2c: Koa specifics`, () => {
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

    it('resets the stream of a streamed body that fails after its first byte with an error code, and releases the lock', async () => {
      let fail!: () => void;
      const failed = new Promise<void>((resolve) => {
        fail = resolve;
      });
      const app = new version.Koa();
      // Koa logs the stream error; that error is what the test makes.
      app.silent = true;
      const router = new Router();
      router.get('/export/:id', lock({ locker, key: 'export:{params.id}' }), (ctx) => {
        let sent = false;
        ctx.type = 'text/plain';
        ctx.body = new Readable({
          read() {
            if (sent) failed.then(() => this.destroy(new Error('the source failed')));
            else this.push('first');
            sent = true;
          },
        });
      });
      app.use(router.routes());
      server = await listenH2(h2c.createServer(app.callback()));
      session = h2c.connect(server);
      const failing = h2Get(session, '/export/1');
      expect(await failing.firstChunk).toBe('first');
      fail();
      await waitFor('export:1 to be free', async () => !(await locker.isLocked('export:1')), {
        timeout: 5_000,
        interval: 10,
      });
      // Reset with NO_ERROR, the stream would read as a whole 200 whose body is "first".
      expect(await failing.answer).toMatchObject({
        status: 200,
        body: 'first',
        rstCode: http2.constants.NGHTTP2_INTERNAL_ERROR,
      });
    });
  });
}
