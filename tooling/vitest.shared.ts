import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineProject, type UserWorkspaceConfig } from 'vitest/config';

const packagesDir = fileURLToPath(new URL('../packages/', import.meta.url));

/** Loads `.lua` files as a default-exported string, as tsup's text loader does in the build. */
export function luaText() {
  return {
    name: 'lua-text',
    transform(code: string, id: string) {
      if (!id.endsWith('.lua')) return null;
      return { code: `export default ${JSON.stringify(code)};`, map: null };
    },
  };
}

/**
 * Every `@lock/<name>` (and `@lock/<name>/<sub>` for `src/<sub>/index.ts`) resolves to its
 * sources, so tests never need a build first. Matches are exact: `@lock/testing` must not
 * swallow `@lock/testing/vitest`.
 */
function workspaceAliases(): { find: RegExp; replacement: string }[] {
  const aliases: { find: RegExp; replacement: string }[] = [];
  for (const name of readdirSync(packagesDir)) {
    const src = `${packagesDir}${name}/src`;
    if (!existsSync(`${src}/index.ts`)) continue;
    aliases.push({ find: new RegExp(`^@lock/${name}$`), replacement: `${src}/index.ts` });
    for (const sub of readdirSync(src)) {
      if (existsSync(`${src}/${sub}/index.ts`)) {
        aliases.push({ find: new RegExp(`^@lock/${name}/${sub}$`), replacement: `${src}/${sub}/index.ts` });
      }
    }
  }
  return aliases;
}

/** The vitest project of one package: its name, the Lua loader, the source aliases. */
export function packageProject(name: string, test: UserWorkspaceConfig['test'] = {}) {
  return defineProject({
    plugins: [luaText()],
    resolve: { alias: workspaceAliases() },
    test: {
      name,
      include: ['test/**/*.test.ts'],
      testTimeout: 30_000,
      hookTimeout: 60_000,
      ...test,
    },
  });
}
