import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type RedisServer, startRedis } from '@lock/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractBlocks, type ReadmeBlock } from '../src/extract.ts';
import { blockFile, blockSource, EXTRACT_DIR } from '../src/place.ts';
import { READMES } from '../src/readmes.ts';
import { runBlock } from '../src/run.ts';
import { type Diagnostic, typecheck } from '../src/typecheck.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));
/** How long a README program may take to exit on its own. */
const RUN_TIMEOUT_MS = 30_000;

const packageDirs = readdirSync(join(root, 'packages')).map((name) => join(root, 'packages', name));
const present = READMES.filter((readme) => existsSync(join(root, readme)));
const blocks = present.flatMap((readme) => extractBlocks(readme, readFileSync(join(root, readme), 'utf8')));
const checked = blocks.filter((block) => block.mode !== 'skip');
const files = new Map(checked.map((block) => [block, blockFile(root, packageDirs, block)]));
const where = (block: ReadmeBlock) => `${block.readme}:${block.line}`;

let diagnostics: Diagnostic[] = [];
let server: RedisServer;
let admin: Redis;

/** Files of blocks since removed or moved would otherwise linger (tsc reads only those listed). */
function removeBlockFiles(dir: string) {
  if (!existsSync(dir)) return;
  for (const name of readdirSync(dir)) if (name.endsWith('.ts')) rmSync(join(dir, name));
}

beforeAll(async () => {
  for (const dir of [root, ...packageDirs]) removeBlockFiles(join(dir, EXTRACT_DIR));
  for (const [block, file] of files) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, blockSource(block));
  }
  [diagnostics, server] = await Promise.all([typecheck(root, [...files.values()]), startRedis()]);
  admin = server.client();
}, 120_000);

afterAll(() => server?.stop());

/** A block's diagnostics, each named by the README line it points at. */
function blockErrors(block: ReadmeBlock): string[] {
  const file = relative(root, files.get(block)!);
  return diagnostics
    .filter((d) => d.file === file)
    .map((d) => `${block.readme}:${block.line + d.line} ${d.text}`);
}

it('every listed README exists', () => {
  expect(READMES.filter((readme) => !present.includes(readme))).toEqual([]);
});

it('tsc reports nothing outside the README blocks (the workspace sources they import)', () => {
  const blockPaths = new Set([...files.values()].map((file) => relative(root, file)));
  expect(diagnostics.filter((d) => !blockPaths.has(d.file))).toEqual([]);
});

// A README whose blocks are all skipped has nothing to check (its markers say why).
describe.each(present.filter((readme) => checked.some((block) => block.readme === readme)))(
  '%s',
  (readme) => {
    for (const block of checked.filter((b) => b.readme === readme)) {
      it(`${where(block)} typechecks under strict`, () => {
        expect(blockErrors(block)).toEqual([]);
      });
      if (block.mode !== 'run') continue;
      it(
        `${where(block)} runs against redis-server and exits 0 on its own`,
        async () => {
          await admin.flushall(); // each program starts from an empty server, as when pasted
          const cwd = join(root, EXTRACT_DIR, 'cwd');
          mkdirSync(cwd, { recursive: true });
          // The ThinkPHP example reads an app's .env: this one names the test server.
          writeFileSync(join(cwd, '.env'), `[REDIS]\nHOST = ${server.host}\nPORT = ${server.port}\n`);
          const result = await runBlock(root, files.get(block)!, {
            cwd,
            env: { ...process.env, REDIS_URL: server.url },
            timeoutMs: RUN_TIMEOUT_MS,
          });
          const verdict = result.timedOut
            ? `still running after ${RUN_TIMEOUT_MS} ms`
            : `exit code ${result.code}`;
          expect(verdict, `${where(block)}\n${result.output}`).toBe('exit code 0');
        },
        RUN_TIMEOUT_MS + 5_000,
      );
    }
  },
);
