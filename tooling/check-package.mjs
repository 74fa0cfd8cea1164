// Packs the package as pnpm publishes it (its `prepack` builds it and what it depends on), checks
// that every file its `exports` name is in the tarball and that its classes keep their names, then
// runs publint and attw on it.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const bin = (name) => fileURLToPath(new URL(`../node_modules/.bin/${name}`, import.meta.url));
const out = mkdtempSync(join(tmpdir(), 'lock-pack-'));
try {
  execFileSync('pnpm', ['pack', '--pack-destination', out], { stdio: ['ignore', 'ignore', 'inherit'] });
  const tarball = join(
    out,
    readdirSync(out).find((f) => f.endsWith('.tgz')),
  );
  const packed = new Set(execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n'));
  const { exports } = JSON.parse(readFileSync('package.json', 'utf8'));
  const targets = (entry) =>
    typeof entry === 'string' ? [entry] : Object.values(entry ?? {}).flatMap((value) => targets(value));
  const missing = targets(exports).filter((file) => !packed.has(`package/${file.replace(/^\.\//, '')}`));
  if (missing.length > 0) throw new Error(`the tarball lacks files its exports name: ${missing.join(', ')}`);
  // A source map naming an absolute path maps nothing on the user's machine and tells them ours.
  execFileSync('tar', ['-xzf', tarball, '-C', out]);
  const absolute = [...packed]
    .filter((file) => file.endsWith('.map'))
    .filter((file) =>
      JSON.parse(readFileSync(join(out, file), 'utf8')).sources.some((source) => source.startsWith('/')),
    );
  if (absolute.length > 0) throw new Error(`source maps name absolute paths: ${absolute.join(', ')}`);
  // As users' logs name them: esbuild renames a class whose body names it (`_LockLostError`);
  // its keepNames option would wrap every closure made on the hot path in a call of its own.
  const main = await import(pathToFileURL(resolve(exports['.'].import.default)).href);
  const renamed = Object.entries(main)
    .filter(
      ([, value]) => typeof value === 'function' && /^class\b/.test(Function.prototype.toString.call(value)),
    )
    .filter(([name, value]) => value.name !== name)
    .map(([name, value]) => `${name} (named ${value.name})`);
  if (renamed.length > 0) throw new Error(`exported classes renamed by the build: ${renamed.join(', ')}`);
  execFileSync(bin('publint'), ['run', tarball, '--strict'], { stdio: 'inherit' });
  execFileSync(bin('attw'), [tarball], { stdio: 'inherit' });
} finally {
  rmSync(out, { recursive: true, force: true });
}
