/**
 * operations/: inbound idempotency keys, the outbound operation ledger and the audit log
 * (docs/operations.md). Imports only core, policy and store.
 */
export * from './idempotency/index.js';
export * from './audit/index.js';
export * from './ledger/index.js';
