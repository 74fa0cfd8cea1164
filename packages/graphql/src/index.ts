export { type LockedDirective, lockedDirective } from './directive.js';
export { LockedDirectiveError } from './directive-error.js';
export { LockedErrorCode } from './field-errors.js';
export { lockOf } from './lock-of.js';
export type {
  HttpStatusOptions,
  KeyFunction,
  LockedCall,
  LockedDirectiveOptions,
} from './options.js';
