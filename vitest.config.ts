import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: [
      'packages/*',
      'packages/testing/vitest.ioredis5.config.ts',
      'tooling/readme-check',
      'examples',
    ],
    // Vitest's default on a 2-core machine is one worker, but the tests mostly wait on Redis,
    // child processes and timers (about a third of one core in use): two files at a time halve
    // the suite's wall time.
    maxWorkers: 2,
  },
});
