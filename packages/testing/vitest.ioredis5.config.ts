import { fileURLToPath } from 'node:url';
import { mergeConfig } from 'vitest/config';
import { packageProject } from '../../tooling/vitest.shared.ts';

/**
 * The packages declare `ioredis ^5.4.0 || ^6.0.0` but install 6: this project runs the tests of
 * what rests on ioredis behaviour (resends after a reconnect, cluster and sentinel reconnects,
 * pub/sub connections, Lua replies) with every `ioredis` import, the library's and
 * `@lock/testing`'s clients alike, resolved to ioredis 5 (the `ioredis-5` dev dependency).
 */
export default mergeConfig(
  packageProject('ioredis5', {
    // Paths from the repository's root, where the tests live.
    root: fileURLToPath(new URL('../..', import.meta.url)),
    include: [
      'packages/testing/ioredis5/*.test.ts',
      'packages/core/test/token/contract.test.ts',
      'packages/core/test/legacy/contract.test.ts',
      'packages/core/test/redlock/contract.test.ts',
      'packages/core/test/token/cluster.test.ts',
      'packages/core/test/token/sentinel.test.ts',
      'packages/core/test/token/cluster-failover.test.ts',
      'packages/core/test/token/cluster-connection-closes.test.ts',
      'packages/core/test/token/listener-reconnect.test.ts',
      'packages/core/test/token/subscribe-during-handshake.test.ts',
      'packages/core/test/scenarios/planned-failover.test.ts',
      'packages/core/test/faults/reentry-undo-resent.test.ts',
      'packages/core/test/script-followup.test.ts',
      'packages/core/test/scenarios/reply-lost.test.ts',
      'packages/core/test/faults/close-resent-release.test.ts',
      'packages/core/test/faults/redis-down.test.ts',
      'packages/core/test/faults/pubsub-loss.test.ts',
      'packages/core/test/faults/stalled-subscribe.test.ts',
      'packages/redisson/test/rlock-wire.test.ts',
      'packages/redisson/test/acquire-resend.test.ts',
      'packages/thinkphp/test/lock.test.ts',
    ],
  }),
  // `ioredis/built/...` too: nothing may reach the installed 6.
  { resolve: { alias: [{ find: /^ioredis(?=\/|$)/, replacement: 'ioredis-5' }] } },
);
