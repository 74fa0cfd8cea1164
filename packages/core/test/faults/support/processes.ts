import type { RetryOptions } from '@lock/core';
import { type ScriptProcess, startScript } from '../../support/script-process.js';

/** Starts holder-process.ts with `plan`; see that file for what it does. */
export function startHolder(plan: {
  url: string;
  key: string;
  ttl: number;
  wait: number;
  retry?: RetryOptions;
}): ScriptProcess {
  return startScript(new URL('./holder-process.ts', import.meta.url), plan);
}
