import { openSqliteStore } from '../../store/sqlite/index.js';
import { type Store } from '../../store/index.js';
import { MemoryCounterStore } from './memory-counters.js';
import { spendStoreContract } from './spend-store-contract.js';
import { counterSpendStore } from './spend-store.js';

spendStoreContract('counters in memory', {
  open: (clock) => counterSpendStore(new MemoryCounterStore(clock)),
});

let store: Store | undefined;
spendStoreContract('counters on SQLite', {
  async open(clock) {
    store = await openSqliteStore({ path: ':memory:', clock });
    return counterSpendStore(store.counters);
  },
  async close() {
    await store?.close();
    store = undefined;
  },
});
