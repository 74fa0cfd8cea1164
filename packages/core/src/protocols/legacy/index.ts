export type { LegacyUnit } from './lease.js';
export { type LegacyProtocolOptions, legacyProtocol } from './legacy.js';
