/**
 * A principal's own AI limits (`Principal.ai`: an API key's `rateRules` and `budgets`) as gateway rules
 * scoped `{ by: 'principal' }`, so they count that principal's requests alone, in the gateway's own counter
 * store (memory, SQLite, PostgreSQL or Redis), and refuse with the gateway's 429s.
 *
 * A rule's counter is named by its window, not by its position or its limit: `key-rate-<fixed|sliding>-<ms>`
 * and `key-spend-<fixed|sliding>-<ms>`. Raising or lowering a key's limit keeps what it has used in the
 * current window; two rules of one key with the same window are one rule, the lower limit.
 */
import { z } from 'zod';
import { OptionsError, type PrincipalAiLimits } from '../../core/index.js';
import { zodProblems } from '../option-problems.js';
import { windowMsSchema } from '../schema-parts.js';
import type { RateRule, SpendRule } from './limits.js';

const windowKind = z.enum(['fixed', 'sliding']).optional();

/** What {@link parsePrincipalAiLimits} accepts: `Principal.ai`'s shape with the gateway's bounds. */
export const principalAiLimitsSchema = z.strictObject({
  allowedModels: z.array(z.string().min(1).max(256)).max(1_000).optional(),
  budgets: z
    .array(
      z.strictObject({
        limitUsd: z.number().finite().positive(),
        windowMs: windowMsSchema,
        window: windowKind,
      }),
    )
    .max(20)
    .optional(),
  rateRules: z
    .array(
      z.strictObject({
        limit: z.number().int().min(1).max(1_000_000),
        windowMs: windowMsSchema,
        window: windowKind,
      }),
    )
    .max(20)
    .optional(),
});

/**
 * Checks a key's AI limits (for the code that creates keys: refuse a bad one when it is made, not when it is
 * used).
 * @throws OptionsError (`RangeError`, `invalid_options`, `owner` as given) listing every bad field:
 *   `<owner>: <path> must be <rule>, got <value>; …` (`ai` names the whole value).
 */
export function parsePrincipalAiLimits(value: unknown, owner = 'ai'): PrincipalAiLimits {
  const parsed = principalAiLimitsSchema.safeParse(value);
  if (parsed.success) return parsed.data as PrincipalAiLimits;
  throw new OptionsError(owner, zodProblems(parsed.error.issues, value, 'ai'));
}

/** The rules of a key, named and deduplicated as the file's comment says. */
export interface CallerRules {
  readonly rateRules: RateRule[];
  readonly spendRules: SpendRule[];
}

/**
 * `ai`'s rate rules and budgets as gateway rules, after {@link parsePrincipalAiLimits}.
 * @throws RangeError as `parsePrincipalAiLimits` (a key stored with limits this gateway cannot apply: its
 *   requests fail closed, 500, rather than run unlimited).
 */
export function callerRules(ai: PrincipalAiLimits): CallerRules {
  const checked = parsePrincipalAiLimits(ai, 'principal.ai');
  const rate = new Map<string, RateRule>();
  for (const r of checked.rateRules ?? []) {
    const technique = r.window ?? 'fixed';
    const name = `key-rate-${technique}-${r.windowMs}`;
    const seen = rate.get(name);
    if (seen === undefined || r.limit < seen.limit) {
      rate.set(name, { name, limit: r.limit, windowMs: r.windowMs, technique, scope: { by: 'principal' } });
    }
  }
  const spend = new Map<string, SpendRule>();
  for (const b of checked.budgets ?? []) {
    const window = b.window ?? 'fixed';
    const name = `key-spend-${window}-${b.windowMs}`;
    const seen = spend.get(name);
    if (seen === undefined || b.limitUsd < seen.budgetUsd) {
      spend.set(name, {
        name,
        budgetUsd: b.limitUsd,
        windowMs: b.windowMs,
        window,
        scope: { by: 'principal' },
      });
    }
  }
  return { rateRules: [...rate.values()], spendRules: [...spend.values()] };
}
