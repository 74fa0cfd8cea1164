import { defineConfig } from 'tsup';

export default defineConfig({
  entry: { index: 'src/index.ts', vitest: 'src/vitest/index.ts' },
  format: ['esm', 'cjs'],
  dts: true,
  target: 'node20',
  sourcemap: true,
  clean: true,
  // One copy of the process registry, also in CommonJS, when both entries are loaded.
  splitting: true,
  loader: { '.lua': 'text' },
});
