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

/** Every `@lock/<name>` resolves to its sources, so tests never need a build first. */
function workspaceAliases(): Record<string, string> {
  const aliases: Record<string, string> = {};
  for (const name of readdirSync(packagesDir)) {
    const entry = `${packagesDir}${name}/src/index.ts`;
    if (existsSync(entry)) aliases[`@lock/${name}`] = entry;
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
