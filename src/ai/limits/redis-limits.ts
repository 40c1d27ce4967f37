import { createRequire } from 'node:module';
import type * as IoRedis from 'ioredis';
import type { Redis } from 'ioredis';
import { defineOptions, o } from '../../core/index.js';
import {
  REDIS_RATE_LIMIT_STORE_DEFAULTS,
  RedisRateLimitStore,
  redisDeadline,
  type RedisUnavailableMode,
} from '../../policy/index.js';
import { RedisSpendStore } from './redis-spend-store.js';

/** Options of {@link createRedisLimits}: exactly one of `url` and `redis`. */
export interface RedisLimitsOptions {
  /** `redis://[:password@]host:port[/db]` (or `rediss://`): a client is made and closed by `close()`. */
  url?: string;
  /** An ioredis client of the caller's, left open by `close()`. */
  redis?: Redis;
  /** Prepended to every key (default `breakwater:`): instances sharing limits use the same prefix. */
  keyPrefix?: string;
  /** Direction of a RATE decision when Redis fails (default `deny`); spend always fails closed. */
  onUnavailable?: RedisUnavailableMode;
  /** Most ms a decision waits for Redis (default 1 000), also the made client's connect and command timeout. */
  timeoutMs?: number;
  /** Hears each Redis failure of either store; must not throw. */
  onError?: (error: unknown, key: string) => void;
}

/** Rate and spend stores over one Redis client. */
export interface RedisLimits {
  /** Give it to `createAiGateway({ rateLimitStore })` (or a `rateLimit` policy's `store`). */
  readonly rateLimitStore: RedisRateLimitStore;
  /** Give it to `createAiGateway({ spendStore })`. */
  readonly spendStore: RedisSpendStore;
  /** The client both stores use. */
  readonly redis: Redis;
  /**
   * Resolves true once the client is connected (at once if it is), false if it is not within `timeoutMs`:
   * the gateway may then start anyway, its decisions failing in their direction until Redis answers.
   */
  ready(): Promise<boolean>;
  /**
   * Closes the client when it was made from `url` (`QUIT`, resolved once the connection has ended; a
   * disconnect when Redis is gone); a client given as `redis` is left open. Idempotent; never rejects.
   */
  close(): Promise<void>;
}

const require = createRequire(import.meta.url);

/** ioredis's client class, loaded when a client is first made from a URL: importing the AI gateway loads no Redis client. */
function redisClient(): typeof Redis {
  return (require('ioredis') as typeof IoRedis).Redis;
}

const parseOptions = defineOptions<RedisLimitsOptions>()(
  'createRedisLimits',
  {
    url: o
      .custom<string>((v) => typeof v === 'string' && /^rediss?:\/\//.test(v), 'a redis:// or rediss:// URL')
      .optional(),
    redis: o.methods<Redis>('an ioredis client', 'evalsha', 'eval').optional(),
    keyPrefix: o.string().optional(),
    onUnavailable: o.enum(['deny', 'allow'] as const).default(REDIS_RATE_LIMIT_STORE_DEFAULTS.onUnavailable),
    timeoutMs: o.number().int().min(1).default(REDIS_RATE_LIMIT_STORE_DEFAULTS.timeoutMs),
    onError: o.fn<(error: unknown, key: string) => void>().optional(),
  },
  (_p, report, input) => {
    const given = (['url', 'redis'] as const).filter((k) => input[k] !== undefined);
    if (given.length !== 1) report('url and redis', 'exactly one given', given);
  },
);

/**
 * The AI gateway's hot counters in Redis (docs/architecture.md#storage, `REDIS_URL`): a
 * {@link RedisRateLimitStore} and a {@link RedisSpendStore} over one client, sharing `keyPrefix` and
 * `timeoutMs`. Spend always fails closed (see {@link RedisSpendStore}); rate fails towards `onUnavailable`.
 *
 * A client made from `url` connects at once and reconnects by itself (ioredis's backoff). It does not queue
 * commands while disconnected (`enableOfflineQueue: false`): during an outage every decision fails at once in
 * its direction instead of waiting `timeoutMs` each, and no stale command is replayed on reconnection. So
 * `await ready()` before serving, or the first requests may fail for want of a connection. Its connect and
 * command timeouts are `timeoutMs`; its `error` events go to `onError` (key `''`) instead of ioredis's
 * console warning.
 *
 * @throws OptionsError (`RangeError`, `invalid_options`) naming every bad option, and `url and redis`
 *   unless exactly one of them is given.
 */
export function createRedisLimits(options: RedisLimitsOptions): RedisLimits {
  const p = parseOptions(options);
  const { timeoutMs, onError } = p;
  const shared = { keyPrefix: p.keyPrefix, timeoutMs, onError };
  const owned = p.url !== undefined;
  const redis =
    p.redis ??
    new (redisClient())(p.url!, {
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      connectTimeout: timeoutMs,
      commandTimeout: timeoutMs,
    });
  if (owned) {
    redis.on('error', (error: unknown) => {
      try {
        onError?.(error, '');
      } catch {
        // a failing listener changes nothing
      }
    });
  }
  const rateLimitStore = new RedisRateLimitStore({
    ...shared,
    redis,
    onUnavailable: p.onUnavailable,
  });
  const spendStore = new RedisSpendStore({ ...shared, redis });
  let closing: Promise<void> | undefined;
  return {
    rateLimitStore,
    spendStore,
    redis,
    ready() {
      if (redis.status === 'ready') return Promise.resolve(true);
      const connected = new Promise<boolean>((resolve) => redis.once('ready', () => resolve(true)));
      return redisDeadline(connected, timeoutMs, 'ready').catch(() => false);
    },
    close() {
      if (!owned) return Promise.resolve();
      // QUIT lets pending replies arrive, then the connection ends; a client that is not connected (or a
      // QUIT that does not finish in time) is simply disconnected, which also stops its reconnecting.
      closing ??= (async () => {
        if (redis.status === 'ready') {
          const ended = new Promise<void>((resolve) => redis.once('end', () => resolve()));
          try {
            await redisDeadline(redis.quit(), timeoutMs, 'close');
            await redisDeadline(ended, timeoutMs, 'close');
            return;
          } catch {
            // disconnect below
          }
        }
        redis.disconnect();
      })();
      return closing;
    },
  };
}
