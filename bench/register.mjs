// `node --import register.mjs` (the bench package's `bench` script, and the 4-process workers)
// runs the bench's own TypeScript with tsx, but takes the `@lock/*` packages as users get them:
// built (`dist`, resolved through node_modules). With the workspace tsconfig's paths, tsx would
// compile their sources on the fly instead, which in two side runs cost `@lock` 18 to 21 µs more
// client CPU per uncontended acquire + release than its build.
import { register } from 'tsx/esm/api';

register({ tsconfig: false });
