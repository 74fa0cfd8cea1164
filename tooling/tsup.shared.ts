import { defineConfig, type Options } from 'tsup';

/** The build of every published package: dual ESM + CJS with types, Lua scripts inlined as text. */
export function libraryBuild(entry: Options['entry'], extra: Options = {}) {
  return defineConfig({
    entry,
    format: ['esm', 'cjs'],
    dts: true,
    target: 'node20',
    sourcemap: true,
    clean: true,
    loader: { '.lua': 'text' },
    ...extra,
  });
}
