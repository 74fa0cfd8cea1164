import { type ClockSkewCheck, type ClockSkewOptions, checkClockSkew } from '../clock-skew.js';
import { checkMs, MAX_TTL } from '../engine/options.js';
import { InvalidOptionError } from '../errors.js';
import type { LockProtocol, RedisClient } from '../protocol.js';
import { tokenProtocol } from '../protocols/token/token.js';
import { isCluster } from '../topology.js';
import { seededAcquire } from './fence.js';
import { quorumOf, validityOf } from './quorum.js';

/** How a quorum backend reaches its masters and judges their answers. */
export interface QuorumBackendOptions {
  /**
   * One client per independent master (no replication between them); 3 or 5 in practice. The
   * backend never closes them. Required; `Cluster` clients are refused (a node is one server).
   * `createRedlock` also refuses, from its first acquire or inspect on, two clients that reach
   * the same redis-server (see `distinctServers`).
   */
  readonly clients: readonly RedisClient[];
  /**
   * The wire format run on every master: `'token'`, or a protocol that implements `raiseFence`,
   * the write half of the quorum fence. Default: `'token'`.
   */
  readonly protocol?: LockProtocol | 'token';
  /**
   * How long to wait for one master's answer, in ms, before counting it as timed out; keep it
   * small against the ttl so a dead master does not eat the lease, yet above a connection
   * set-up (the first call on a fresh client also connects and loads the script). Every call
   * waits for all masters (each at most this long), so it also bounds each call: one round for
   * inspect and a waiter's subscription, two for release (then the release of holds a minority
   * still counts after a majority released) and extend (renewal, then the release of a lost
   * lease), three for acquire (attempt, fence write-back, release of what a failed attempt
   * took). A ttl whose validity (ttl − drift) is not above it is warned about once
   * (`process.emitWarning`, code `ERR_LOCK_NODE_TIMEOUT`): one master that does not answer then
   * makes every attempt outlast its validity. Default: `250`.
   */
  readonly nodeTimeout?: number;
  /**
   * Clock drift allowance as a fraction of the ttl; drift = ⌊ttl × driftFactor⌋ + 2 ms. A ttl
   * that leaves no validity (ttl − drift ≤ 0) is refused with `InvalidOptionError`: the
   * locker's at creation, each call's before anything is written. Default: `0.01`.
   */
  readonly driftFactor?: number;
  /** Monotonic clock in ms used to measure each attempt. Default: `performance.now`. */
  readonly clock?: () => number;
  /**
   * The check of each master's wall clock against this process's, by the first acquisition on
   * each of its connections (see `MasterClocks`): `margin` in ms, `action` `'warn'` (once per
   * server, beside the acquisition) or `'refuse'` (the acquisition waits for the reading, and a
   * master found off does not count toward the majority). Default: `{ margin: 1000, action: 'warn' }`.
   */
  readonly clockSkew?: ClockSkewOptions;
}

/** Failures the backend absorbed rather than reported: releases of leftovers that got no answer. */
export interface QuorumStats {
  /**
   * Node releases (after a failed acquire or extend, or of holds a minority still counts after a
   * release) that failed or timed out; the key then expires by its TTL.
   */
  releaseFailures: number;
}

/** The resolved settings shared by every operation of one quorum backend. */
export interface QuorumContext {
  readonly clients: readonly RedisClient[];
  readonly protocol: LockProtocol & Required<Pick<LockProtocol, 'raiseFence'>>;
  readonly quorum: number;
  readonly nodeTimeout: number;
  readonly driftFactor: number;
  readonly clock: () => number;
  readonly clockSkew: ClockSkewCheck;
  readonly stats: QuorumStats;
}

/** Rounds of one acquire at most (attempt, fence write-back, release of leftovers). */
const ROUNDS_PER_CALL = 3;
/** Margin on top of the rounds: the verdict on a silent master waits for the event loop's next check phase. */
const ROUND_SLACK = 50;
const MAX_NODE_TIMEOUT = Math.floor((MAX_TTL - ROUND_SLACK) / ROUNDS_PER_CALL);

/** How long one call over the masters may take with `nodeTimeout`: the engine's command timeout for RedLock. */
export function callTimeout(nodeTimeout: number): number {
  return ROUNDS_PER_CALL * nodeTimeout + ROUND_SLACK;
}

/** Checks every option before anything is sent and fills in the defaults. */
export function resolveQuorumOptions(options: QuorumBackendOptions): QuorumContext {
  const { clients } = options;
  if (!Array.isArray(clients) || clients.length === 0) {
    throw new InvalidOptionError('clients', clients, 'a non-empty array of ioredis clients, one per master');
  }
  clients.forEach((client, index) => {
    if (typeof (client as { evalsha?: unknown } | null)?.evalsha !== 'function') {
      throw new InvalidOptionError(`clients[${index}]`, client, 'an ioredis client');
    }
    if (isCluster(client)) {
      throw new InvalidOptionError(`clients[${index}]`, 'a Cluster', 'a client of one standalone master');
    }
  });
  const first = clients.findIndex((client, index) => clients.indexOf(client) !== index);
  if (first !== -1) {
    const same = clients.flatMap((client, index) => (client === clients[first] ? [`clients[${index}]`] : []));
    throw new InvalidOptionError(
      'clients',
      `${same.join(' and ')} (the same client)`,
      'distinct clients (one per independent master)',
    );
  }
  const given: unknown = options.protocol;
  const protocol = given === undefined || given === 'token' ? tokenProtocol() : given;
  if (typeof (protocol as Partial<LockProtocol> | null)?.raiseFence !== 'function') {
    const shown =
      typeof protocol === 'object' && protocol !== null ? (protocol as { name?: unknown }).name : protocol;
    throw new InvalidOptionError('protocol', shown, "'token' or a protocol that implements raiseFence");
  }
  const nodeTimeout = options.nodeTimeout === undefined ? 250 : checkMs(options.nodeTimeout, 'nodeTimeout');
  // The engine's deadline for a call is made of it: it must stay a timer Node can arm.
  if (callTimeout(nodeTimeout) > MAX_TTL) {
    throw new InvalidOptionError('nodeTimeout', nodeTimeout, `at most ${MAX_NODE_TIMEOUT} ms`);
  }
  const driftFactor = options.driftFactor === undefined ? 0.01 : options.driftFactor;
  if (
    typeof driftFactor !== 'number' ||
    !Number.isFinite(driftFactor) ||
    driftFactor < 0 ||
    driftFactor >= 1
  ) {
    throw new InvalidOptionError(
      'driftFactor',
      driftFactor,
      'a fraction from 0 (inclusive) to 1 (exclusive)',
    );
  }
  const clock = options.clock === undefined ? () => performance.now() : options.clock;
  if (typeof clock !== 'function')
    throw new InvalidOptionError('clock', clock, 'a function returning monotonic ms');
  const clockSkew = checkClockSkew(options.clockSkew);
  return {
    clients,
    protocol: onMasters(protocol as QuorumContext['protocol'], nodeTimeout, driftFactor),
    quorum: quorumOf(clients.length),
    nodeTimeout,
    driftFactor,
    clock,
    clockSkew,
    stats: { releaseFailures: 0 },
  };
}

/**
 * `protocol` as every master runs it: each grant's fence seeded from the master's clock when its
 * counter was never seeded (see `seededAcquire`), and a ttl refused when it leaves no validity.
 * Made with `Object.create`, not a spread: whatever else the protocol has, on its prototype too
 * (a class), stays as it is.
 */
function onMasters(
  protocol: QuorumContext['protocol'],
  nodeTimeout: number,
  driftFactor: number,
): QuorumContext['protocol'] {
  let warned = false;
  const checkTtl = (ttl: number): void => {
    protocol.checkTtl?.(ttl);
    const validity = validityOf(ttl, driftFactor);
    if (validity <= 0) {
      throw new InvalidOptionError(
        'ttl',
        ttl,
        `a ttl that leaves a validity with driftFactor ${driftFactor}: ttl − ⌊ttl × driftFactor⌋ − 2 ms is ${validity}`,
      );
    }
    // Not refused: a master that answers slowly but surely may need a long timeout, and an attempt
    // that outlasts its validity is undone, never handed out.
    if (nodeTimeout >= validity && !warned) {
      warned = true;
      process.emitWarning(
        `RedLock nodeTimeout ${nodeTimeout} ms is not below the validity of a ${ttl} ms lease (${validity} ms): one master that does not answer makes every attempt end too late to be granted`,
        { code: 'ERR_LOCK_NODE_TIMEOUT', type: 'LockWarning' },
      );
    }
  };
  return Object.create(protocol, {
    acquire: {
      value: (...args: Parameters<LockProtocol['acquire']>) => seededAcquire(protocol, ...args),
    },
    checkTtl: { value: checkTtl },
  }) as QuorumContext['protocol'];
}
