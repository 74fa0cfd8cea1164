import { createLocker } from '@lock/core';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it, vi } from 'vitest';

afterEach(() => {
  vi.restoreAllMocks();
});

/** A Sentinel-managed client that never connects: the warning depends on its options alone. */
function sentinelClient(failoverDetector?: boolean): Redis {
  return new Redis({
    sentinels: [{ host: '127.0.0.1', port: 1 }],
    name: 'locks',
    lazyConnect: true,
    failoverDetector,
  });
}

describe('a Sentinel-managed client without failoverDetector', () => {
  it('is warned about once per process; one with the detector, or no Sentinel, is not', async () => {
    const warnings = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const clients = [
      sentinelClient(true),
      new Redis({ lazyConnect: true }),
      sentinelClient(),
      sentinelClient(false),
    ];
    for (const redis of clients) await createLocker({ redis }).close();
    expect(warnings.mock.calls.map((call) => (call[1] as { code?: string } | undefined)?.code)).toEqual([
      'ERR_LOCK_FAILOVER_DETECTOR',
    ]);
    expect(String(warnings.mock.calls[0]![0])).toContain('failoverDetector: true');
    for (const redis of clients) redis.disconnect();
  });
});
