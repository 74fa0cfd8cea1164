/**
 * `pnpm bench [--quick]` runs the comparison (compare.ts); `pnpm bench soak` the memory soak
 * (soak/main.ts). Each mode is loaded only when chosen, so neither pays for the other's hooks.
 */
if (process.argv.slice(2).includes('soak')) await import('./soak/main.js');
else await import('./compare.js');
