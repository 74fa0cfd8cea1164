import { libraryBuild } from '../../tooling/tsup.shared.ts';

export default libraryBuild(
  { index: 'src/index.ts', 'http/index': 'src/http/index.ts' },
  // One copy of the shared classes, also in CommonJS, when both entries are loaded.
  // Through rollup (treeshake): tsup's own CommonJS split writes source maps that point at the
  // built file itself, named by the build machine's absolute path, not at the sources.
  { splitting: true, treeshake: true },
);
