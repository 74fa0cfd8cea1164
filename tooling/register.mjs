// `node --import ./tooling/register.mjs file.ts` runs workspace TypeScript from source:
// tsx compiles it, and the Lua hooks (registered last, so consulted first) load `.lua` files.
import { register } from 'node:module';
import { register as registerTsx } from 'tsx/esm/api';

registerTsx();
register('./lua-hooks.mjs', import.meta.url);
