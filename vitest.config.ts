import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'examples/**/*.test.ts'],
    environment: 'node',
    testTimeout: 10_000,
    restoreMocks: true,
  },
});
