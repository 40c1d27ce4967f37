/**
 * Notices about AI spend budgets: a budget counter at 80 % of its budget, and used up (100 %: spent, or
 * refusing requests for what was spent), each once per counter and window in this process.
 */
import type { BudgetEvent } from '../../ai/index.js';
import type { Clock, Disposable } from '../../core/index.js';
import { duration, isoSecond, usd, type NoticeSink } from './lines.js';
import { Pacer } from './pace.js';

/** The limits of the budget notices. */
export const BUDGET_NOTICES = {
  /** Lines per rule per interval (a rule scoped per caller or metadata value has many counters). */
  burst: 4,
  intervalMs: 60_000,
} as const;

/** Where budget events come from (the AI gateway's and its route resolver's `onBudget`). */
export type BudgetEvents = (listener: (event: BudgetEvent) => void) => Disposable;

/**
 * Prints each budget counter's 80 % and 100 % once per window (the limits report every refusal; the first
 * is the news). At most {@link BUDGET_NOTICES.burst} lines per rule per minute, the rest counted at its end.
 */
export function watchBudgets(events: BudgetEvents, sink: NoticeSink, clock: Clock): Disposable {
  const { intervalMs } = BUDGET_NOTICES;
  const pacer = new Pacer({
    clock,
    burst: BUDGET_NOTICES.burst,
    intervalMs,
    summary: (key, held) => {
      const [owner, rule] = key.split('\n') as [string, string];
      sink({
        event: 'budget_lines_held',
        level: 'warn',
        text: `${ruleLabel(owner, rule)}: ${held} more budget ${held === 1 ? 'line' : 'lines'} within ${duration(intervalMs)} not shown`,
        fields: { rule, owner, held },
      });
    },
  });
  /** The window end of each counter threshold already reported, by counter and threshold. */
  const reported = new Map<string, number>();
  const subscription = events((event) => {
    const now = clock.now();
    for (const [key, windowEnd] of reported) if (windowEnd <= now) reported.delete(key);
    const counter = `${event.owner}\n${event.rule}\n${event.scopeKey}\n${event.windowStart}\n${event.percent}`;
    if (reported.has(counter)) return;
    reported.set(counter, event.windowEnd);
    if (!pacer.allow(`${event.owner}\n${event.rule}`)) return;
    const label = `${ruleLabel(event.owner, event.rule)} (${scopeLabel(event)})`;
    const spent = `${usd(event.spentMicroUsd)} of ${usd(event.budgetMicroUsd)} USD spent`;
    const until = isoSecond(event.windowEnd);
    sink({
      event: event.percent === 80 ? 'budget_at_80' : 'budget_used_up',
      level: 'warn',
      text:
        event.percent === 80
          ? `${label} at 80 %: ${spent} in the window ending ${until}; requests go on until it is used up`
          : `${label} used up: ${spent}; requests it covers get 429 spend_limited until ${until}`,
      fields: {
        rule: event.rule,
        owner: event.owner,
        scope: event.scope.by,
        scope_key: event.scopeKey,
        percent: event.percent,
        spent_usd: event.spentMicroUsd / 1_000_000,
        budget_usd: event.budgetMicroUsd / 1_000_000,
        window_end: new Date(event.windowEnd).toISOString(),
      },
    });
  });
  return {
    dispose() {
      subscription.dispose();
      pacer.dispose();
      reported.clear();
    },
  };
}

/** `AI budget daily`, or `AI budget daily of route support` for a route's limit node. */
function ruleLabel(owner: string, rule: string): string {
  return owner.startsWith('route:') ? `AI budget ${rule} of route ${owner.slice(6)}` : `AI budget ${rule}`;
}

/** Which counter: `provider openai`, `model openai/gpt-4o`, `user=alice`, `user absent`, `caller key:k1`. */
function scopeLabel(event: BudgetEvent): string {
  const { scope, scopeKey } = event;
  if (scopeKey === 'none') return `${scope.key ?? 'metadata'} absent`;
  const value = scopeKey.startsWith('v:')
    ? decodeURIComponent(scopeKey.slice(2))
    : `a long value (sha256 ${scopeKey.slice(2, 14)}…)`;
  if (scope.by === 'metadata') return `${scope.key ?? 'metadata'}=${value}`;
  return `${scope.by === 'principal' ? 'caller' : scope.by} ${value}`;
}
