/**
 * Spend per rule against its budget, for the dashboard: each gateway-wide spend rule's counters of the
 * current window, read from the counter store the AI gateway reserves and settles in (so every instance
 * sharing the store sees the same numbers). The counter keys follow `AiLimits` (ai/limits/limits.ts):
 * `ai:spend:<rule>:<scope key>:<window start>`, the scope key from ai's own `scopeKey`.
 */
import {
  readSpendState,
  scopeKey,
  spendWindowStart,
  usdToMicro,
  type RuleScope,
  type SpendRule,
} from '../../ai/index.js';
import type { Clock, Principal } from '../../core/index.js';
import type { CounterStore } from '../../store/index.js';
import { iso } from './views.js';

/** What the spend view reads. */
export interface AdminSpendSource {
  /** The gateway-wide spend rules (the app's `ai.spendRules`). */
  rules: readonly SpendRule[];
  /** The configured provider names. */
  providers: readonly string[];
  /** The priced models, `<provider>/<model>` (the keys of `ai.prices`). */
  models: readonly string[];
  /** The store's counters (`store.counters`). */
  counters: Pick<CounterStore, 'get'>;
  clock: Clock;
}

/** One counter of a rule (one scope value) in the current window. */
export interface SpendCounterView {
  /** What it counts: a provider, `<provider>/<model>`, `<key>=<value>`, or `<key> absent`. */
  scope: string;
  spent_usd: number;
  /** Reserved by requests still running (settled to their real cost when they end). */
  reserved_usd: number;
  /** `budget − spent − reserved`, never below 0. */
  remaining_usd: number;
  /** `(spent + reserved) / budget`, 0 to 1 (more only if a real cost passed its estimate). */
  used_ratio: number;
}

/** A spend rule as the admin API answers it. */
export interface SpendRuleView {
  name: string;
  budget_usd: number;
  window_ms: number;
  scope: RuleScope;
  /** The current window, `[window_start, window_end)`. */
  window_start: string;
  window_end: string;
  counters: SpendCounterView[];
  /**
   * False when the rule keeps one counter per metadata value (`{ by: 'metadata', key }` without `value`) or
   * per principal (`{ by: 'principal' }` without `value`): those values cannot be listed, so only the
   * counter of requests without the key is shown (none for principals).
   */
  complete: boolean;
}

const MICRO = 1_000_000;
const NO_METADATA = {};

/** Each rule with its counters of the current window (a counter never written reads as 0 spent). */
export async function readSpend(source: AdminSpendSource): Promise<SpendRuleView[]> {
  const now = source.clock.now();
  return Promise.all(
    source.rules.map(async (rule) => {
      const start = spendWindowStart(now, rule.windowMs);
      const budgetMicro = usdToMicro(rule.budgetUsd);
      const targets = scopeTargets(rule.scope, source);
      const counters = await Promise.all(
        targets.map(async ({ label, key }) => {
          const state = readSpendState(await source.counters.get(`ai:spend:${rule.name}:${key}:${start}`));
          const used = state.spentMicroUsd + state.reservedMicroUsd;
          return {
            scope: label,
            spent_usd: state.spentMicroUsd / MICRO,
            reserved_usd: state.reservedMicroUsd / MICRO,
            remaining_usd: Math.max(0, budgetMicro - used) / MICRO,
            used_ratio: budgetMicro === 0 ? 1 : used / budgetMicro,
          };
        }),
      );
      return {
        name: rule.name,
        budget_usd: rule.budgetUsd,
        window_ms: rule.windowMs,
        scope: rule.scope,
        window_start: iso(start),
        window_end: iso(start + rule.windowMs),
        counters,
        complete: !(
          (rule.scope.by === 'metadata' || rule.scope.by === 'principal') &&
          rule.scope.value === undefined
        ),
      };
    }),
  );
}

/** The counters a scope can be read at: label and scope key (ai's `scopeKey`, so keys match the limits). */
function scopeTargets(scope: RuleScope, source: AdminSpendSource): { label: string; key: string }[] {
  const keyed = (label: string, provider: string, model: string, metadata: Record<string, string>) => {
    const key = scopeKey(scope, { provider, model, metadata });
    return key === undefined ? [] : [{ label, key }];
  };
  switch (scope.by) {
    case 'provider':
      return source.providers.flatMap((p) => keyed(p, p, '', NO_METADATA));
    case 'model':
      return source.models.flatMap((m) => {
        const slash = m.indexOf('/');
        return keyed(m, m.slice(0, slash), m.slice(slash + 1), NO_METADATA);
      });
    case 'metadata': {
      const name = scope.key ?? '';
      return scope.value === undefined
        ? keyed(`${name} absent`, '', '', NO_METADATA)
        : keyed(`${name}=${scope.value}`, '', '', { [name]: scope.value });
    }
    case 'principal': {
      // One counter per caller: only a rule filtered on one principal has a counter to show.
      if (scope.value === undefined) return [];
      const principal = { id: scope.value } as Principal; // scopeKey reads only its id
      const key = scopeKey(scope, { provider: '', model: '', metadata: NO_METADATA, principal });
      return key === undefined ? [] : [{ label: `principal=${scope.value}`, key }];
    }
  }
}
