import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['@doyen/source'] },
  ssr: { resolve: { conditions: ['@doyen/source'] } },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
