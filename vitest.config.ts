import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One file at a time. The files that start servers, child processes and send loads have
    // delivery deadlines (500 ms per send) that fail when two files starve each other on two
    // cores; and the unit files are CPU-bound: two at a time took longer than one (57 and 85 s
    // against 46 and 62 s for test/unit/, runs alternated on the shared 2-core machine).
    // The fast loop is `npm run test:quick` (docs/testing.md).
    fileParallelism: false,
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
