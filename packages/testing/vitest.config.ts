import { packageProject } from '../../tooling/vitest.shared.ts';

export default packageProject('testing', { globalSetup: ['./src/vitest/global-setup.ts'] });
