import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { POSITIVE_INTEGER, finite, optionalFn } from '../../core/index.js';

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

/** {@link RedisStoreOptions} checked, with defaults applied. */
export interface RedisStoreSettings {
  redis: RedisScriptClient;
  keyPrefix: string;
  timeoutMs: number;
  unavailableRetryAfterMs: number;
  /** Calls `onError` (if any) for a failed or late command; a listener that throws changes nothing. */
  report(error: unknown, key: string): void;
}

/**
 * Checks a Redis store's common options and applies `defaults`.
 * @throws RangeError naming `owner` and the option: `redis` that is not an ioredis client, a non-string
 *   `keyPrefix`, `timeoutMs` / `unavailableRetryAfterMs` that are not integers ≥ 1, an `onError` that is not a function.
 */
export function redisStoreSettings(
  owner: string,
  options: RedisStoreOptions,
  defaults: { keyPrefix: string; timeoutMs: number; unavailableRetryAfterMs: number },
): RedisStoreSettings {
  if (typeof options?.redis?.evalsha !== 'function' || typeof options.redis.eval !== 'function') {
    throw new RangeError(`${owner}: redis must be an ioredis client`);
  }
  const keyPrefix = options.keyPrefix ?? defaults.keyPrefix;
  if (typeof keyPrefix !== 'string') throw new RangeError(`${owner}: keyPrefix must be a string`);
  const onError = optionalFn(owner, 'onError', options.onError);
  return {
    redis: options.redis,
    keyPrefix,
    timeoutMs: finite(owner, 'timeoutMs', options.timeoutMs ?? defaults.timeoutMs, POSITIVE_INTEGER),
    unavailableRetryAfterMs: finite(
      owner,
      'unavailableRetryAfterMs',
      options.unavailableRetryAfterMs ?? defaults.unavailableRetryAfterMs,
      POSITIVE_INTEGER,
    ),
    report(error, key) {
      try {
        onError?.(error, key);
      } catch {
        // a failing listener changes nothing
      }
    },
  };
}
