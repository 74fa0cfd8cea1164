import { existsSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import type { ReadmeBlock } from './extract.ts';

/** The directory, in each package (and at the root), that extracted blocks are written to. */
export const EXTRACT_DIR = '.readme-check';

const IMPORT = /(?:^|\n)\s*(?:import|export)\s(?:[^'";]*?\sfrom\s)?\s*['"]([^'"]+)['"]/g;

/** The npm packages a block imports: not `node:`, not relative, not the workspace's `@lock/*`. */
export function importedPackages(code: string): string[] {
  const names = new Set<string>();
  for (const [, specifier = ''] of code.matchAll(IMPORT)) {
    if (specifier.startsWith('.') || specifier.startsWith('node:') || specifier.startsWith('@lock/'))
      continue;
    const parts = specifier.split('/');
    names.add(specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!);
  }
  return [...names];
}

/** Whether Node (and tsc) find `name` from a file in `dir`: a node_modules entry up to the root. */
function resolvesFrom(root: string, dir: string, name: string): boolean {
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, 'node_modules', name))) return true;
    if (relative(root, at) === '') return false;
  }
}

/** The nearest directory holding a package.json: the package a README belongs to. */
function packageOf(root: string, readme: string): string {
  let at = dirname(join(root, readme));
  while (!existsSync(join(at, 'package.json')) && relative(root, at) !== '') at = dirname(at);
  return at;
}

/**
 * Where a block's file goes so that its imports resolve as in a user's project: pnpm installs
 * `express`, `koa` or `graphql` only in the packages that depend on them. The README's own
 * package comes first; a block whose imports resolve nowhere stays there, for tsc to report.
 */
export function blockFile(root: string, packageDirs: readonly string[], block: ReadmeBlock): string {
  const imports = importedPackages(block.code);
  const home = packageOf(root, block.readme);
  const dir = [home, ...packageDirs].find((candidate) =>
    imports.every((name) => resolvesFrom(root, candidate, name)),
  );
  const name = `${block.readme.replace(/\.md$/, '').replaceAll('/', '-')}-${block.line}.ts`;
  return join(dir ?? home, EXTRACT_DIR, name);
}

/** The file's text: the block, made a module so top-level await works and names stay local. */
export function blockSource(block: ReadmeBlock): string {
  return `${block.code}\nexport {};\n`;
}
