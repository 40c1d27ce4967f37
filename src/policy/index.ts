/**
 * policy/: the resilience policies (docs/policies.md). Imports only core. Each policy file exports its
 * class, a shorthand factory, its options type with a `*_DEFAULTS` const, and its event types.
 */
export type { Next, Observable, Policy, PolicyContext, PolicyFn } from './types.js';
export { Pipeline, pipeline } from './pipeline.js';
export * from './timeout.js';
export * from './backoff.js';
export * from './retry.js';
export { NOT_REPEATED_BY_DEFAULT, repeatableByDefault } from './retryable.js';
export * from './circuit-breaker.js';
export * from './breaker-windows.js';
export * from './bulkhead.js';
export * from './rate-limit/index.js';
export * from './fallback.js';
export * from './hedging.js';
export * from './fault-injection.js';
