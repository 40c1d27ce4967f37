/**
 * The operator's notices of a gateway or worker process (docs/operations-guide.md, "What the operator
 * sees"): one concise line for each thing a person running it must know, paced so that a storm of the
 * same failure cannot flood the terminal.
 */
import type { Clock, Disposable } from '../../core/index.js';
import type { CircuitBreakerPolicy } from '../../policy/index.js';
import { watchBudgets, type BudgetEvents } from './budgets.js';
import { watchBreakers, watchTimeouts, type WatchedBreaker, type WatchedUpstream } from './dependencies.js';
import type { NoticeSink } from './lines.js';
import { watchStore, type ProbedStore } from './store.js';
import { watchDeadLetters, watchWebhookRejections, type WatchedIngress, type WatchedJobs } from './work.js';

export { BUDGET_NOTICES, type BudgetEvents } from './budgets.js';
export { DEPENDENCY_NOTICES, type WatchedUpstream } from './dependencies.js';
export { jsonNotices, textNotices, type Notice, type NoticeLevel, type NoticeSink } from './lines.js';
export { STORE_NOTICES, STORE_PROBE_ID, type ProbedStore } from './store.js';
export { WORK_NOTICES } from './work.js';

/** What {@link watchOperatorEvents} watches; each part is optional. */
export interface OperatorEventsOptions {
  /** Where the notices go (`textNotices` or `jsonNotices`). */
  sink: NoticeSink;
  clock: Clock;
  /** The app's upstreams: their breakers (labelled by the upstream's name) and timeouts. */
  upstreams?: readonly WatchedUpstream[];
  /** Other breakers (the webhook handlers'), labelled by their own names. */
  breakers?: readonly CircuitBreakerPolicy[];
  /** The process's jobs runtime: its dead letters. */
  jobs?: WatchedJobs;
  /** The webhook ingress: sources rejecting deliveries. */
  webhooks?: WatchedIngress;
  /** The AI gateway's budget events (80 % and 100 %). */
  budgets?: BudgetEvents;
  /** The store, probed with one indexed read; absent: the store is not watched. */
  store?: ProbedStore;
  /** How often the store is probed, ms (default {@link STORE_NOTICES.checkEveryMs}: 10 000). */
  storeCheckEveryMs?: number;
}

/** Starts every watcher; the disposable stops them all (and their timers). */
export function watchOperatorEvents(options: OperatorEventsOptions): Disposable {
  const { sink, clock } = options;
  const upstreams = options.upstreams ?? [];
  const breakers: WatchedBreaker[] = [
    ...upstreams.flatMap((u) =>
      u.policies.breaker === undefined ? [] : [{ label: u.name, breaker: u.policies.breaker }],
    ),
    ...(options.breakers ?? []).map((breaker) => ({ label: breaker.name, breaker })),
  ];
  const watchers: Disposable[] = [
    watchBreakers(breakers, sink, clock),
    watchTimeouts(upstreams, sink, clock),
  ];
  if (options.jobs !== undefined) watchers.push(watchDeadLetters(options.jobs, sink, clock));
  if (options.webhooks !== undefined) watchers.push(watchWebhookRejections(options.webhooks, sink, clock));
  if (options.budgets !== undefined) watchers.push(watchBudgets(options.budgets, sink, clock));
  if (options.store !== undefined) {
    watchers.push(watchStore(options.store, sink, clock, options.storeCheckEveryMs));
  }
  let active = true;
  return {
    dispose() {
      if (!active) return;
      active = false;
      for (const watcher of watchers) watcher.dispose();
    },
  };
}
