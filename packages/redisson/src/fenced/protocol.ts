import { AcquireScript } from '../attempt.js';
import { RLockProtocol } from '../lock/protocol.js';
import acquireLua from './acquire.lua';

const fencedAcquire = new AcquireScript(acquireLua);

/**
 * Redisson's RFencedLock: an RLock (same hash, channel, unlock, watchdog and inspection) whose
 * every acquisition, re-entry included, draws its token from `redisson_lock_token:{name}`.
 */
export class FencedLockProtocol extends RLockProtocol {
  override readonly name = 'redisson-fenced';
  protected override readonly acquireScript = fencedAcquire;
}
