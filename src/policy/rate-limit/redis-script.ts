import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { o } from '../../core/index.js';

/**
 * What a Redis-backed store needs of an ioredis client: `EVALSHA`, `EVAL` and `DEL`. A `Redis` (or `Cluster`,
 * when every key of one call hashes to one slot) fits.
 */
export type RedisScriptClient = Pick<Redis, 'evalsha' | 'eval' | 'del'>;

/**
 * A Lua script run atomically by Redis: `EVALSHA` first (only the 40-character SHA1 travels), and `EVAL`
 * with the whole source when the server answers `NOSCRIPT` (its script cache is empty after a restart, a
 * failover or `SCRIPT FLUSH`); the `EVAL` caches it again. Scripts must be deterministic in their arguments
 * (no `TIME`, no random), so a replica or an AOF replay computes the same writes.
 */
export class RedisScript {
  /** Hex SHA1 of `source`, as `SCRIPT LOAD` would answer. */
  readonly sha: string;

  constructor(readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /**
   * Runs the script on `keys` (`KEYS[1..]`) with `args` (`ARGV[1..]`).
   * @throws the client's error (connection, `ReplyError` from the script) other than `NOSCRIPT`.
   */
  async run(redis: RedisScriptClient, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
      return redis.eval(this.source, keys.length, ...keys, ...args);
    }
  }
}

/**
 * `promise`, or a rejection with an Error (`code` `ETIMEDOUT`) after `timeoutMs` of real time, whichever
 * comes first. The timer is unref'd and cleared on every path. A command that loses the race may still
 * run on the server later; callers document what that means for them.
 */
export function redisDeadline<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(
        Object.assign(new Error(`${what}: Redis did not answer within ${timeoutMs} ms`), {
          code: 'ETIMEDOUT',
        }),
      );
    }, timeoutMs);
    timer.unref();
  });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT');
}

/** The options every Redis-backed store takes (see `RedisRateLimitStore`, `RedisSpendStore`). */
export interface RedisStoreOptions {
  redis: RedisScriptClient;
  keyPrefix?: string;
  timeoutMs?: number;
  unavailableRetryAfterMs?: number;
  onError?: (error: unknown, key: string) => void;
}

/** The defaults a Redis-backed store gives {@link redisStoreShape}. */
export interface RedisStoreDefaults {
  readonly keyPrefix: string;
  readonly timeoutMs: number;
  readonly unavailableRetryAfterMs: number;
}

/**
 * The schemas of {@link RedisStoreOptions} with a store's `defaults`, for the store's own `defineOptions`:
 * `redis` an ioredis client (`evalsha` and `eval`), `keyPrefix` a string, `timeoutMs` and
 * `unavailableRetryAfterMs` integers >= 1, `onError` a function or left out.
 */
export function redisStoreShape(defaults: RedisStoreDefaults) {
  return {
    redis: o.methods<RedisScriptClient>('an ioredis client', 'evalsha', 'eval'),
    keyPrefix: o.string().default(defaults.keyPrefix),
    timeoutMs: o.number().int().min(1).default(defaults.timeoutMs),
    unavailableRetryAfterMs: o.number().int().min(1).default(defaults.unavailableRetryAfterMs),
    onError: o.fn<(error: unknown, key: string) => void>().optional(),
  };
}

/** {@link RedisStoreOptions} once validated, defaults applied: what a {@link RedisScriptStore} starts from. */
export interface RedisStoreSettings {
  readonly redis: RedisScriptClient;
  readonly keyPrefix: string;
  readonly timeoutMs: number;
  readonly unavailableRetryAfterMs: number;
  readonly onError?: ((error: unknown, key: string) => void) | undefined;
}

/**
 * The base of a Redis-backed store (`RedisRateLimitStore`, `RedisSpendStore`): its validated settings, the
 * client, `report` (`onError` through {@link redisErrorReporter}) and {@link RedisScriptStore.runScript}.
 * Each store validates its own options (its own owner in the OptionsError) before calling this constructor.
 */
export abstract class RedisScriptStore {
  /** Prepended to every key. */
  readonly keyPrefix: string;
  /** Most ms a command waits for Redis. */
  readonly timeoutMs: number;
  /** `retryAfterMs` of what is refused because Redis failed. */
  readonly unavailableRetryAfterMs: number;
  protected readonly redis: RedisScriptClient;
  protected readonly report: (error: unknown, key: string) => void;

  protected constructor(settings: RedisStoreSettings) {
    this.redis = settings.redis;
    this.keyPrefix = settings.keyPrefix;
    this.timeoutMs = settings.timeoutMs;
    this.unavailableRetryAfterMs = settings.unavailableRetryAfterMs;
    this.report = redisErrorReporter(settings.onError);
  }

  /**
   * Runs `script` on the one key `keyPrefix + key` with `args`, under {@link redisDeadline} (`timeoutMs`,
   * `what` naming it in the timeout's message).
   * @throws the client's error, or the deadline's `ETIMEDOUT` Error.
   */
  protected runScript(
    script: RedisScript,
    key: string,
    args: readonly string[],
    what: string,
  ): Promise<unknown> {
    return redisDeadline(script.run(this.redis, [this.keyPrefix + key], args), this.timeoutMs, what);
  }
}

/** Calls `onError` (if any) for a failed or late command; a listener that throws changes nothing. */
export function redisErrorReporter(
  onError: ((error: unknown, key: string) => void) | undefined,
): (error: unknown, key: string) => void {
  return (error, key) => {
    try {
      onError?.(error, key);
    } catch {
      // a failing listener changes nothing
    }
  };
}
