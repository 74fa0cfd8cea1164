export * from './attributes.js';
export type { HoldOutcome } from './holds.js';
export { instrumentLocks, type LockInstrumentation } from './instrument.js';
export { keyPattern } from './key-pattern.js';
export * from './metric-names.js';
export type { InstrumentLocksOptions } from './options.js';
export type { AcquireOutcome } from './outcome.js';
export { dbStatementSerializer } from './statement-serializer.js';
