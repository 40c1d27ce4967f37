/**
 * Budget thresholds: a spend rule's counter reaching 80 % and 100 % of its budget in a window, for the
 * operator (the gateway prints a line for each; see docs/operations-guide.md). Reported by the process whose
 * settle crossed the threshold, or whose request the budget refused, so a threshold is heard where it
 * happened rather than by every process polling the counters.
 */
import type { RuleScope } from './scope.js';

/** The budget thresholds reported, in percent of the budget. */
export const BUDGET_THRESHOLDS = [80, 100] as const;

/**
 * A spend rule's counter reached a threshold in its current window:
 * - `80`: a settled cost took `spent` from below 80 % of the budget to at or above it;
 * - `100`: a settled cost took `spent` to the budget or above (a real cost over its estimate), or the budget
 *   refused a request because what was spent leaves less than the request's estimated cost
 *   (`spend_limited`, refusal `budget_spent`): it refuses such requests until the window ends.
 * Amounts are micro-USD; times ms since the epoch on the limits' clock.
 */
export interface BudgetEvent {
  readonly percent: (typeof BUDGET_THRESHOLDS)[number];
  /** The spend rule's name. */
  readonly rule: string;
  /** Whose rule: `ai` for the gateway's (and callers' own budgets), `route:<name>` for a route's limit node. */
  readonly owner: string;
  readonly scope: RuleScope;
  /**
   * The counter's scope key (`v:<URI-encoded value>`, `h:<sha256>` for a long value, `none` for metadata
   * without the key), as in the counter's name.
   */
  readonly scopeKey: string;
  readonly spentMicroUsd: number;
  readonly budgetMicroUsd: number;
  readonly windowStart: number;
  readonly windowEnd: number;
}

/** The thresholds a settle crossed: `spent` went from `before` to `after` under `budget` (all micro-USD). */
export function crossedThresholds(before: number, after: number, budget: number): Array<80 | 100> {
  const crossed: Array<80 | 100> = [];
  for (const percent of BUDGET_THRESHOLDS) {
    // Integer micro-USD: `spent * 100 >= budget * percent` is exact, with no fraction to round.
    if (before * 100 < budget * percent && after * 100 >= budget * percent) crossed.push(percent);
  }
  return crossed;
}
