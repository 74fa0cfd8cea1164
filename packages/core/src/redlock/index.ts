export { type QuorumBackend, quorumBackend } from './backend.js';
export { UnreachableMastersError } from './connections.js';
export { createRedlock, type RedlockOptions } from './create.js';
export type { QuorumBackendOptions, QuorumStats } from './options.js';
