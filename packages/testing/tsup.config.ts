import { libraryBuild } from '../../tooling/tsup.shared.ts';

export default libraryBuild(
  { index: 'src/index.ts', vitest: 'src/vitest/index.ts' },
  // One copy of the process registry, also in CommonJS, when both entries are loaded.
  { splitting: true },
);
