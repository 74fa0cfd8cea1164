import type { Redis } from 'ioredis';

/**
 * Counts the commands `redis` sends from now on and has not had answered. `drained()` resolves
 * once none is left over a whole turn of the event loop, so that a command a caller sends only
 * on an earlier one's answer (a resend after `NOSCRIPT`, a script after its checks) has been
 * answered too: what a test of "nothing lands late" waits for before it reads the server.
 */
export function commandsInFlight(redis: Redis): { pending(): number; drained(): Promise<void> } {
  let pending = 0;
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((...args: Parameters<typeof send>) => {
    pending += 1;
    const settled = () => {
      pending -= 1;
    };
    args[0].promise.then(settled, settled);
    return send(...args);
  }) as typeof send;
  return {
    pending: () => pending,
    async drained() {
      const end = performance.now() + 10_000;
      for (;;) {
        if (pending === 0) {
          await new Promise((resolve) => setImmediate(resolve));
          if (pending === 0) return;
        }
        if (performance.now() > end) throw new Error('never: the connection drained');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
  };
}
