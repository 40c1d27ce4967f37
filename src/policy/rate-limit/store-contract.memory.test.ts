import { MemoryRateLimitStore } from './memory-store.js';
import { rateLimitStoreContract } from './store-contract.js';

// Small sweeps, so expired entries are really evicted during the long sequences.
rateLimitStoreContract('memory', { open: () => new MemoryRateLimitStore({ sweepEvery: 4, sweepBatch: 8 }) });
