import { BreakwaterError, defineOptions } from '../../core/index.js';
import {
  RedisScript,
  RedisScriptStore,
  redisStoreShape,
  type RedisScriptClient,
} from '../../policy/index.js';
import type { SpendState } from './spend.js';
import type { SpendReservation, SpendStore } from './spend-store.js';

/** Options of {@link RedisSpendStore}; validated at construction. */
export interface RedisSpendStoreOptions {
  /** An ioredis client; the caller owns it (this store never closes it). */
  redis: RedisScriptClient;
  /** Prepended to every key (default `breakwater:`). */
  keyPrefix?: string;
  /** Most ms a reservation or settlement waits for Redis (integer >= 1, default 1 000). */
  timeoutMs?: number;
  /** `retryAfterMs` of a request refused because Redis failed (integer >= 1, default 1 000). */
  unavailableRetryAfterMs?: number;
  /** Hears each Redis failure of `reserve` (refused) and `settle`; must not throw. */
  onError?: (error: unknown, key: string) => void;
}

/** Defaults of {@link RedisSpendStoreOptions}. */
export const REDIS_SPEND_STORE_DEFAULTS = {
  keyPrefix: 'breakwater:',
  timeoutMs: 1_000,
  unavailableRetryAfterMs: 1_000,
} as const;

const parseOptions = defineOptions<RedisSpendStoreOptions>()(
  'RedisSpendStore',
  redisStoreShape(REDIS_SPEND_STORE_DEFAULTS),
);

const HELPERS = `
local function num(x) return string.format('%.17g', x) end
local function safe(x) return x ~= nil and x == math.floor(x) and math.abs(x) <= 9007199254740991 end
local key = KEYS[1]
local kind = redis.call('TYPE', key)['ok']
local spent, reserved, valid = 0, 0, false
if kind == 'hash' then
  local f = redis.call('HMGET', key, 's', 'r')
  local s, r = tonumber(f[1]), tonumber(f[2])
  if safe(s) and safe(r) then spent, reserved, valid = s, r, true end
end
`;

/** spend.ts `reserveStep`. ARGV: estimate, budget, ms to the window's end. Answer `{ ok, spent, reserved }`. */
const RESERVE = new RedisScript(`${HELPERS}
local estimate, budget, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if spent + reserved + estimate > budget then return { 0, num(spent), num(reserved) } end
if kind ~= 'none' and not valid then redis.call('DEL', key) end
reserved = reserved + estimate
redis.call('HSET', key, 's', num(spent), 'r', num(reserved))
redis.call('PEXPIRE', key, num(math.max(1, math.ceil(ttl))))
return { 1, num(spent), num(reserved) }
`);

/** spend.ts `settleStep`. ARGV: reserved, cost, ms to the window's end. Answer `{ spent, reserved }` or nil. */
const SETTLE = new RedisScript(`${HELPERS}
if not valid then return false end
local release, cost, ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
spent = spent + cost
reserved = math.max(0, reserved - release)
redis.call('HSET', key, 's', num(spent), 'r', num(reserved))
redis.call('PEXPIRE', key, num(math.max(1, math.ceil(ttl))))
return { num(spent), num(reserved) }
`);

/**
 * A {@link SpendStore} in Redis, so spend budgets hold across every gateway instance sharing it. `reserve` and
 * `settle` are one Lua script each (EVALSHA, EVAL on `NOSCRIPT`), the same rules as spend.ts's steps: reserve
 * when spent + reserved + estimate <= budget, settle by removing the reservation and adding the real cost.
 * A window is a hash (`s` spent, `r` reserved, micro-USD) that `PEXPIRE`s at the window's end as the
 * caller's clock sees it (`windowEndMs - nowMs` from now: never Redis `TIME`).
 *
 * Spend always fails CLOSED: when Redis is unreachable, answers an error, or takes longer than `timeoutMs`,
 * `reserve` rejects with BreakwaterError `spend_limited` (429, transient, `retryAfterMs` =
 * `unavailableRetryAfterMs`, `details { reason: 'store_unavailable' }`). Letting a request through unchecked
 * could overshoot the budget, and a count in this process would multiply it by the number of instances. A
 * reservation that timed out may still land on Redis later: it is then counted until the window ends (the
 * budget under-used, never overshot). `settle` rejects with the client's error; the gateway ignores it, which
 * leaves the reservation counted until the window ends (conservative).
 *
 * @throws OptionsError (`RangeError`, `invalid_options`) at construction, naming every bad option.
 */
export class RedisSpendStore extends RedisScriptStore implements SpendStore {
  constructor(options: RedisSpendStoreOptions) {
    super(parseOptions(options));
  }

  async reserve(
    key: string,
    estimateMicroUsd: number,
    budgetMicroUsd: number,
    windowEndMs: number,
    nowMs: number,
  ): Promise<SpendReservation> {
    let reply: [number, string, string];
    try {
      reply = (await this.run(RESERVE, key, [estimateMicroUsd, budgetMicroUsd, windowEndMs - nowMs])) as [
        number,
        string,
        string,
      ];
    } catch (error) {
      this.report(error, key);
      const wait = this.unavailableRetryAfterMs;
      throw BreakwaterError.withoutStack('spend_limited', {
        message: `The spend budget could not be checked (its store is unreachable); try again in ${Math.ceil(wait / 1000)} s.`,
        retryAfterMs: wait,
        details: { reason: 'store_unavailable' },
        cause: error,
      });
    }
    return { ok: reply[0] === 1, spentMicroUsd: Number(reply[1]), reservedMicroUsd: Number(reply[2]) };
  }

  async settle(
    key: string,
    reservedMicroUsd: number,
    costMicroUsd: number,
    windowEndMs: number,
    nowMs: number,
  ): Promise<SpendState | undefined> {
    let reply: [string, string] | null;
    try {
      reply = (await this.run(SETTLE, key, [reservedMicroUsd, costMicroUsd, windowEndMs - nowMs])) as
        [string, string] | null;
    } catch (error) {
      this.report(error, key);
      throw error;
    }
    return reply === null
      ? undefined
      : { spentMicroUsd: Number(reply[0]), reservedMicroUsd: Number(reply[1]) };
  }

  private run(script: RedisScript, key: string, args: number[]): Promise<unknown> {
    return this.runScript(script, key, args.map(String), 'spend');
  }
}
