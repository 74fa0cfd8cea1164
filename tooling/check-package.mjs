// Packs the package as pnpm publishes it, then runs publint and attw on that tarball.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const bin = (name) => fileURLToPath(new URL(`../node_modules/.bin/${name}`, import.meta.url));
const out = mkdtempSync(join(tmpdir(), 'lock-pack-'));
try {
  execFileSync('pnpm', ['pack', '--pack-destination', out], { stdio: ['ignore', 'ignore', 'inherit'] });
  const tarball = join(
    out,
    readdirSync(out).find((f) => f.endsWith('.tgz')),
  );
  execFileSync(bin('publint'), ['run', tarball, '--strict'], { stdio: 'inherit' });
  execFileSync(bin('attw'), [tarball], { stdio: 'inherit' });
} finally {
  rmSync(out, { recursive: true, force: true });
}
