import { counterRateLimitStore } from '../../src/ai/index.js';
import { rateLimitStoreContract } from '../../src/policy/rate-limit/store-contract.js';
import type { Store } from '../../src/store/index.js';
import { describePostgres, postgresStoreHarness } from '../support/postgres.js';

/**
 * The limiter contract on the PostgreSQL store's counters: a fresh schema `bw_rate_<random>` per test, dropped
 * after it; `another` opens a second store (its own pool) on the same schema, as another process would.
 */
describePostgres('rate-limit contract tests')('PostgreSQL rate limits', () => {
  const h = postgresStoreHarness('bw_rate');
  const open: Store[] = [];
  rateLimitStoreContract('postgres', {
    async open(clock) {
      const store = await h.open(clock);
      open.push(store);
      return counterRateLimitStore(store.counters);
    },
    async another(clock) {
      const store = await h.reopen(clock);
      open.push(store);
      return counterRateLimitStore(store.counters);
    },
    async close() {
      for (const store of open.splice(0)) await store.close();
      await h.cleanup();
    },
  });
});
