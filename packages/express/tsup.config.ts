import { libraryBuild } from '../../tooling/tsup.shared.ts';

export default libraryBuild(
  { index: 'src/index.ts', 'http/index': 'src/http/index.ts' },
  // One copy of the shared classes, also in CommonJS, when both entries are loaded.
  { splitting: true },
);
