import { counterRateLimitStore } from '../../src/ai/index.js';
import { rateLimitStoreContract } from '../../src/policy/rate-limit/store-contract.js';
import { sqliteFacetBackend } from '../../src/store/facets-contract.js';
import type { Store } from '../../src/store/index.js';

/**
 * The limiter contract on the SQLite store's counters (`counterRateLimitStore(store.counters)`): a file in a
 * fresh temporary folder per test; `another` opens a second store on the same file, as another process would.
 */
const files = sqliteFacetBackend('bw-rate-limit');
const open: Store[] = [];

rateLimitStoreContract('sqlite', {
  async open(clock) {
    const store = await files.open(clock);
    open.push(store);
    return counterRateLimitStore(store.counters);
  },
  async another(clock) {
    const store = await files.reopen(clock);
    open.push(store);
    return counterRateLimitStore(store.counters);
  },
  async close() {
    for (const store of open.splice(0).reverse()) await store.close();
    await files.cleanup?.();
  },
});
