import { randomBytes } from 'node:crypto';
import { defineOptions, o } from '../../core/index.js';
import type { RateLimitAlgorithm, RateLimitDecision } from './algorithms.js';
import { FIXED_WINDOW_LUA, SLIDING_WINDOW_LUA, TOKEN_BUCKET_LUA } from './redis-lua.js';
import {
  RedisScript,
  RedisScriptStore,
  redisDeadline,
  redisStoreShape,
  type RedisScriptClient,
} from './redis-script.js';
import type { RateLimitStore } from './store.js';

/** What a decision is when Redis cannot give one: `deny` refuses the request, `allow` lets it through. */
export type RedisUnavailableMode = 'deny' | 'allow';

/** Options of {@link RedisRateLimitStore}; validated at construction. */
export interface RedisRateLimitStoreOptions {
  /** An ioredis client (`new Redis(url)`); the caller owns it (this store never closes it). */
  redis: RedisScriptClient;
  /** Prepended to every key (default `breakwater:`); give instances that share one limit the same prefix. */
  keyPrefix?: string;
  /** Direction of a decision when Redis fails or is slower than `timeoutMs` (default `deny`). */
  onUnavailable?: RedisUnavailableMode;
  /** Most ms a decision waits for Redis before failing in the `onUnavailable` direction (integer >= 1, default 1 000). */
  timeoutMs?: number;
  /** `retryAfterMs` (and `resetMs`) of a decision denied because Redis failed (integer >= 1, default 1 000). */
  unavailableRetryAfterMs?: number;
  /** Hears each Redis failure answered in the `onUnavailable` direction (for logs and metrics); must not throw. */
  onError?: (error: unknown, key: string) => void;
}

/** Defaults of {@link RedisRateLimitStoreOptions}. */
export const REDIS_RATE_LIMIT_STORE_DEFAULTS = {
  keyPrefix: 'breakwater:',
  onUnavailable: 'deny',
  timeoutMs: 1_000,
  unavailableRetryAfterMs: 1_000,
} as const;

const parseOptions = defineOptions<RedisRateLimitStoreOptions>()('RedisRateLimitStore', {
  ...redisStoreShape(REDIS_RATE_LIMIT_STORE_DEFAULTS),
  onUnavailable: o.enum(['deny', 'allow'] as const).default(REDIS_RATE_LIMIT_STORE_DEFAULTS.onUnavailable),
});

const SCRIPTS = {
  fixed_window: new RedisScript(FIXED_WINDOW_LUA),
  sliding_window: new RedisScript(SLIDING_WINDOW_LUA),
  token_bucket: new RedisScript(TOKEN_BUCKET_LUA),
} as const;

/**
 * A {@link RateLimitStore} in Redis (docs/architecture.md#storage: `REDIS_URL` holds hot counters), so a
 * limit holds across every gateway instance sharing the Redis: 30 per minute over three instances is 30,
 * not 90.
 *
 * Each `consume` is ONE Lua script (EVALSHA, EVAL on `NOSCRIPT`) per algorithm, a line-for-line mirror of
 * the algorithm's `step` in algorithms.ts (see redis-lua.ts): the read, the decision and the write are atomic
 * in Redis, so concurrent requests from any number of processes never both take the last unit, and the
 * decisions (`allowed`, `remaining`, `resetMs`, `retryAfterMs`) are exactly those of the memory, SQLite and
 * PostgreSQL stores. Time is the caller's `nowMs`, never Redis `TIME` (instances' clocks are handled as the
 * algorithms document: a window or bucket never moves backwards). A denied request writes nothing; an
 * allowed one `PEXPIRE`s the key `resetMs` later, when its state is equivalent to none. State: fixed window
 * and token bucket a hash, sliding window a sorted set of timestamps (one member per unit of cost, at most
 * `limit`). The store supports exactly the three built-in algorithm types (by `algorithm.config.type`).
 *
 * When Redis is unreachable, answers an error, or takes longer than `timeoutMs`, the decision fails in the
 * `onUnavailable` direction, without rejecting:
 * - `deny` (default): `{ allowed: false, remaining: 0, resetMs, retryAfterMs }` with both `unavailableRetryAfterMs`
 *   (1 s): callers turn it into their usual `rate_limited` 429 with `Retry-After`.
 * - `allow`: `{ allowed: true, remaining: 0, resetMs: 0, retryAfterMs: 0 }`: the request goes through
 *   unlimited while Redis is down.
 * It never falls back to a count in this process: with N instances that would silently multiply the limit
 * by N. A command that timed out may still run on Redis later and count (over-counting, never under).
 * `onError` hears every such failure.
 *
 * `consume` rejects (nothing sent) with a RangeError for an invalid `cost` or an empty key, and a TypeError for
 * an algorithm of another type. `reset` deletes the key, and rejects with the client's error on failure.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`) at construction, naming every bad option.
 */
export class RedisRateLimitStore extends RedisScriptStore implements RateLimitStore {
  readonly onUnavailable: RedisUnavailableMode;

  constructor(options: RedisRateLimitStoreOptions) {
    const p = parseOptions(options);
    super(p);
    this.onUnavailable = p.onUnavailable;
  }

  async consume(
    key: string,
    algorithm: RateLimitAlgorithm,
    cost: number,
    nowMs: number,
  ): Promise<RateLimitDecision> {
    checkKey(key);
    algorithm.checkCost(cost);
    const { script, args } = scriptFor(algorithm);
    const argv = [String(nowMs), String(cost), ...args];
    if (script === SCRIPTS.sliding_window) argv.push(randomBytes(6).toString('base64url'));
    let reply: unknown;
    try {
      reply = await this.runScript(script, key, argv, 'rate limit');
    } catch (error) {
      return this.unavailable(error, key, algorithm.limit);
    }
    const [allowed, remaining, resetMs, retryAfterMs] = reply as [number, string, string, string];
    return {
      allowed: allowed === 1,
      limit: algorithm.limit,
      remaining: Number(remaining),
      resetMs: Number(resetMs),
      retryAfterMs: Number(retryAfterMs),
    };
  }

  async reset(key: string): Promise<void> {
    checkKey(key);
    await redisDeadline(this.redis.del(this.keyPrefix + key), this.timeoutMs, 'rate limit reset');
  }

  private unavailable(error: unknown, key: string, limit: number): RateLimitDecision {
    this.report(error, key);
    if (this.onUnavailable === 'allow') {
      return { allowed: true, limit, remaining: 0, resetMs: 0, retryAfterMs: 0 };
    }
    const wait = this.unavailableRetryAfterMs;
    return { allowed: false, limit, remaining: 0, resetMs: wait, retryAfterMs: wait };
  }
}

/** The script of `algorithm` and its configuration as `ARGV[3..]`. */
function scriptFor(algorithm: RateLimitAlgorithm): { script: RedisScript; args: string[] } {
  const config = algorithm.config;
  switch (config?.type) {
    case 'fixed_window':
      return { script: SCRIPTS.fixed_window, args: [String(config.limit), String(config.windowMs)] };
    case 'sliding_window':
      return { script: SCRIPTS.sliding_window, args: [String(config.limit), String(config.windowMs)] };
    case 'token_bucket':
      return {
        script: SCRIPTS.token_bucket,
        args: [
          String(config.capacity),
          String(config.refillTokens ?? config.capacity),
          String(config.refillIntervalMs),
        ],
      };
    default:
      throw new TypeError(
        `RedisRateLimitStore: unsupported algorithm type ${JSON.stringify((config as { type?: unknown })?.type)}`,
      );
  }
}

function checkKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0) {
    throw new RangeError('RedisRateLimitStore: key must be a non-empty string');
  }
}
