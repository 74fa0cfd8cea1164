import type { Redis } from 'ioredis';

/**
 * A client of the old Redis-docs algorithm (the SETNX page, JedisLock of seed 000), scripted
 * step by step so tests can interleave it with others. Its clock is the test's to set, which
 * is the point: this algorithm judges expiry by the client's own clock.
 */
export class OldAlgorithmPeer {
  /** Milliseconds this client's clock runs ahead of the real one (negative: behind). */
  clockOffset = 0;

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
    /** Lease in ms written as `now + expire + 1`. */
    private readonly expire: number,
  ) {}

  now(): number {
    return Date.now() + this.clockOffset;
  }

  /** One pass of JedisLock's acquire loop: SETNX, else GET and, if expired by our clock, GETSET. */
  async tryAcquire(): Promise<boolean> {
    const expires = String(this.now() + this.expire + 1);
    if ((await this.redis.setnx(this.key, expires)) === 1) return true;
    const current = await this.redis.get(this.key);
    if (current === null || Number(current) >= this.now()) return false;
    const old = await this.redis.getset(this.key, expires);
    return old === current;
  }

  /** The docs' release, step 1: "check that your timeout has not passed". */
  async stillMine(): Promise<boolean> {
    const current = await this.redis.get(this.key);
    return current !== null && this.now() < Number(current);
  }

  /** The docs' release, step 2: a plain DEL, whoever holds the key by now. */
  async del(): Promise<void> {
    await this.redis.del(this.key);
  }
}
