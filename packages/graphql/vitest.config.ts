import { createRequire } from 'node:module';
import { packageProject } from '../../tooling/vitest.shared.ts';

const require = createRequire(import.meta.url);

// graphql 16 ships CommonJS (`main`) and ESM (`module`) builds. Node loads the CommonJS one for
// Apollo, Yoga and graphql-tools; vite would give our sources the ESM one, and graphql refuses
// types from "another realm". One build for everyone, as in production.
export default packageProject('graphql', {
  alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
});
