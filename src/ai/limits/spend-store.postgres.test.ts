import { describePostgres, postgresStoreHarness } from '../../../test/support/postgres.js';
import type { Store } from '../../store/index.js';
import { spendStoreContract } from './spend-store-contract.js';
import { counterSpendStore } from './spend-store.js';

/** The spend contract on the PostgreSQL store's counters: a fresh schema `bw_spend_<random>` per test. */
describePostgres('spend store tests')('PostgreSQL spend store', () => {
  const h = postgresStoreHarness('bw_spend');
  let store: Store | undefined;
  spendStoreContract('counters on PostgreSQL', {
    async open(clock) {
      store = await h.open(clock);
      return counterSpendStore(store.counters);
    },
    async close() {
      await store?.close();
      store = undefined;
      await h.cleanup();
    },
  });
});
