import { isPermissionError } from '../acl-refusal.js';
import {
  type ClockSkew,
  type ClockSkewCheck,
  foundOff,
  readClock,
  skewRefusal,
  socketAddress,
  unsureRefusal,
  warnClockUnchecked,
} from '../clock-skew.js';
import { isUnreachable } from '../engine/deadline.js';
import type { RedisClient } from '../protocol.js';
import type { MasterConnections } from './connections.js';
import { runIdIn } from './distinct-servers.js';

/** One reading of a master's clock. */
interface Reading {
  /** The master's connection it was made on (`closesOf`); -1 once it no longer counts. */
  closes: number;
  /** Until the master answered. */
  pending: Promise<void> | undefined;
  /** With 'refuse': the master's clock found off. */
  skew: ClockSkew | undefined;
  /** With 'refuse': why the master could not be read (it is down); the acquisition there fails with it. */
  failure: unknown;
}

/** Not seen by anyone: `fanOut` ignores the failures of a master it stopped waiting for. */
const GIVEN_UP = new Error('the attempt stopped waiting for this master before its clock was read');

/**
 * Each RedLock master's clock, read (`TIME`; `INFO server` for the run id of one found off) by the first
 * acquisition on each of its connections: the first one, and again after every reconnect (a
 * master that restarted may come back with another clock). With 'warn' the reading runs beside
 * that acquisition and costs it no round trip. With 'refuse' the acquisition on that master waits
 * for it (one round trip more, once per connection), and a master found off is not sent the
 * acquisition: it fails there with `ClockSkewError`, so that master does not count toward the
 * majority, as if it were down, and leaves nothing held. Nor is a master the attempt stopped
 * waiting for (`nodeTimeout`) before its reading answered: the attempt was decided without it. A
 * master found off is read again by the next acquisition, so that one whose clock was put right
 * counts again at once; so is one whose reading took longer than the margin (it proves nothing),
 * before the acquisition is sent, once: a second reading as slow leaves it out of that attempt.
 * A master that answers `TIME` with an error (an ACL, a `rename-command`, a proxy) is not checked
 * on that connection, and is warned about once.
 */
export class MasterClocks {
  private readonly readings: (Reading | undefined)[] = [];

  constructor(
    private readonly clients: readonly RedisClient[],
    private readonly connections: MasterConnections,
    private readonly check: ClockSkewCheck,
  ) {}

  /**
   * `acquire` on master `index`, once its clock was read when the check refuses; not sent once
   * `settled` says the attempt no longer waits for that master.
   */
  gate<T>(
    index: number,
    resource: string,
    settled: () => boolean,
    acquire: () => Promise<T>,
    rereading = false,
  ): Promise<T> {
    const reading = this.current(index);
    if (reading.pending === undefined || this.check.action !== 'refuse') return acquire();
    return reading.pending.then(() => {
      if (reading.skew) throw skewRefusal(resource, reading.skew);
      if (reading.failure !== undefined) throw reading.failure;
      if (settled()) throw GIVEN_UP;
      // An unsure reading was not kept: read once more. A master still that slow does not count,
      // rather than be read again and again until nodeTimeout.
      if (reading.closes === -1) {
        if (rereading) throw unsureRefusal(resource, this.check.margin);
        return this.gate(index, resource, settled, acquire, true);
      }
      return acquire();
    });
  }

  /** The reading on master `index`'s connection, started now if there is none. */
  private current(index: number): Reading {
    const closes = this.connections.closesOf(index);
    const known = this.readings[index];
    if (known?.closes === closes) return known;
    const reading: Reading = { closes, pending: undefined, skew: undefined, failure: undefined };
    this.readings[index] = reading;
    reading.pending = this.read(index, reading);
    return reading;
  }

  private async read(index: number, reading: Reading): Promise<void> {
    const client = this.clients[index]!;
    const sentAt = Date.now();
    try {
      const verdict = readClock(this.check, await client.time(), sentAt, Date.now());
      if (typeof verdict !== 'number') {
        reading.pending = undefined;
        if (verdict === 'unsure') reading.closes = -1;
        return;
      }
      // Asked only of a master found off, to name it (an ACL may refuse it: named without).
      const runId = runIdIn(await client.info('server').catch(() => ''));
      reading.pending = undefined;
      const name = this.nameOf(index, runId);
      reading.skew = foundOff(this.check, runId ?? name, name, verdict);
      if (reading.skew) reading.closes = -1;
    } catch (error) {
      reading.pending = undefined;
      // An error reply (an ACL, a renamed or missing TIME) is the master's answer, not an outage:
      // this connection cannot be checked, and is not asked again.
      if (!isUnreachable(error)) {
        if (!isPermissionError(error)) warnClockUnchecked(this.nameOf(index, undefined), error as Error);
        return;
      }
      reading.failure = error;
      reading.closes = -1;
    }
  }

  /** `clients[i] (address, run_id …)` as far as they are known. */
  private nameOf(index: number, runId: string | undefined): string {
    const known = [socketAddress(this.clients[index]!), runId && `run_id ${runId.slice(0, 8)}`].filter(
      Boolean,
    );
    return `clients[${index}]${known.length === 0 ? '' : ` (${known.join(', ')})`}`;
  }
}
