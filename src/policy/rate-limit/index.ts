/** Rate limiting: pure algorithms, the store contract, the memory and Redis stores, and the policy. */
export {
  FixedWindow,
  SlidingWindow,
  TokenBucket,
  rateLimitAlgorithm,
  type FixedWindowConfig,
  type FixedWindowState,
  type RateLimitAlgorithm,
  type RateLimitConfig,
  type RateLimitDecision,
  type RateLimitStep,
  type SlidingWindowConfig,
  type SlidingWindowState,
  type TokenBucketConfig,
  type TokenBucketState,
} from './algorithms.js';
export type { RateLimitStore } from './store.js';
export {
  MEMORY_RATE_LIMIT_STORE_DEFAULTS,
  MemoryRateLimitStore,
  type MemoryRateLimitStoreOptions,
} from './memory-store.js';
export {
  RATE_LIMIT_DEFAULTS,
  RateLimitPolicy,
  rateLimit,
  rateLimitedError,
  type RateLimitDecisionEvent,
  type RateLimitOptions,
} from './policy.js';
export {
  REDIS_RATE_LIMIT_STORE_DEFAULTS,
  RedisRateLimitStore,
  type RedisRateLimitStoreOptions,
  type RedisUnavailableMode,
} from './redis-store.js';
export {
  RedisScript,
  RedisScriptStore,
  redisDeadline,
  redisErrorReporter,
  redisStoreShape,
  type RedisScriptClient,
  type RedisStoreDefaults,
  type RedisStoreOptions,
  type RedisStoreSettings,
} from './redis-script.js';
