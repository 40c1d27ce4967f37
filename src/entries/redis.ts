/**
 * `breakwater/redis`: the Redis-backed limit stores shared by every gateway process: the rate limit
 * store for `rateLimit`, and the AI gateway's rate and spend limits (`createRedisLimits`, which loads
 * ioredis).
 */
export {
  REDIS_RATE_LIMIT_STORE_DEFAULTS,
  RedisRateLimitStore,
  type RedisRateLimitStoreOptions,
  type RedisUnavailableMode,
  type RedisScriptClient,
  type RedisStoreOptions,
} from '../policy/index.js';
export {
  createRedisLimits,
  type RedisLimits,
  type RedisLimitsOptions,
  REDIS_SPEND_STORE_DEFAULTS,
  RedisSpendStore,
  type RedisSpendStoreOptions,
} from '../ai/index.js';
