import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { sleep } from '../measure/stats.js';

// `pnpm bench soak` starts node without --expose-gc: setting the flag now exposes `gc` in
// contexts created afterwards, so a fresh one hands it over.
setFlagsFromString('--expose-gc');
const collect = (globalThis.gc ?? runInNewContext('gc')) as () => void;

/** How long to let fire-and-forget work (unlock latches, cleared timers) finish before reading. */
const SETTLE_MS = 1_000;
/** Full collections per reading: weak callbacks and finalizers may free more on a later pass. */
const PASSES = 3;

/** Heap used, in bytes, after the work in flight has settled and full collections have run. */
export async function heapAfterGc(): Promise<number> {
  await sleep(SETTLE_MS);
  for (let pass = 0; pass < PASSES; pass++) {
    collect();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage().heapUsed;
}
