// `node --import ./bench/register.mjs` runs the bench's own TypeScript with tsx, but takes the
// `@lock/*` packages as users get them: built (`dist`, resolved through node_modules). With the
// workspace tsconfig's paths, tsx would compile their sources on the fly instead: in two side
// runs that cost `@lock` 18 to 21 µs more client CPU per uncontended acquire + release than its
// build (esbuild's keepNames helpers, which the build leaves out, among it).
import { register } from 'tsx/esm/api';

register({ tsconfig: false });
