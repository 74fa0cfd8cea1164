import { libraryBuild } from '../../tooling/tsup.shared.ts';

export default libraryBuild(['src/index.ts']);
