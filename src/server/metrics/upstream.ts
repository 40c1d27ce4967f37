/**
 * An upstream's metrics: its request latency (from `onResult`), its policies' events (breaker transitions,
 * bulkhead rejections, retries and give-ups, timeouts) and, on scrape, its breaker state and bulkhead counts.
 */
import type { Disposable } from '../../core/index.js';
import type { CircuitState } from '../../policy/index.js';
import type { Upstream } from '../../upstream/index.js';
import { methodLabel, statusClass } from './catalogue.js';
import type { Instruments } from './instruments.js';
import { all } from './observers.js';

/** What {@link UpstreamMetrics.observe} reads of an upstream (any `createUpstream` result fits). */
export type ObservedUpstream = Pick<Upstream, 'name' | 'policies' | 'onResult'>;

const STATES: readonly CircuitState[] = ['closed', 'open', 'half-open', 'isolated'];

/** The upstreams observed by one `createMetrics`, and their scrape-time gauges. */
export class UpstreamMetrics {
  private readonly observed = new Set<ObservedUpstream>();

  constructor(private readonly m: Instruments) {}

  observe(upstream: ObservedUpstream): Disposable {
    const { m } = this;
    const dependency = upstream.name;
    const { breaker, bulkhead, retry, timeout } = upstream.policies;
    const subscriptions: Disposable[] = [
      upstream.onResult((e) => {
        const labels = {
          dependency,
          method: methodLabel(e.method),
          status_class: statusClass(e.status),
          outcome: e.code ?? 'success',
        };
        m.upstreamDuration.observe(labels, e.durationMs / 1000);
      }),
      timeout.onTimeout((e) => m.timeouts.inc({ dependency, code: e.code })),
    ];
    if (breaker !== undefined) {
      subscriptions.push(
        breaker.onStateChange((c) => m.breakerTransitions.inc({ dependency, from: c.from, to: c.to })),
      );
    }
    if (bulkhead !== undefined) {
      subscriptions.push(
        bulkhead.onRejected((e) => m.bulkheadRejected.inc({ dependency, reason: e.reason })),
      );
    }
    if (retry !== undefined) {
      // Zero from the start, so `rate()` sees the first retry.
      m.retries.inc({ dependency }, 0);
      subscriptions.push(
        retry.onRetry(() => m.retries.inc({ dependency })),
        retry.onGiveUp((e) => m.retryGiveUps.inc({ dependency, reason: e.reason })),
      );
    }
    this.observed.add(upstream);
    subscriptions.push({ dispose: () => this.observed.delete(upstream) });
    return all(subscriptions);
  }

  /**
   * Scrape: one 1/0 series per breaker state. Reading `state()` applies a due open → half-open transition
   * (the breaker has no timers), so the transitions counter is current too.
   */
  collectBreakers(): void {
    const gauge = this.m.breakerState;
    gauge.reset();
    for (const upstream of this.observed) {
      const breaker = upstream.policies.breaker;
      if (breaker === undefined) continue;
      const current = breaker.state().state;
      for (const state of STATES) gauge.set({ dependency: upstream.name, state }, state === current ? 1 : 0);
    }
  }

  /** Scrape: applies due breaker transitions, so the transitions counter read next is current. */
  refreshBreakers(): void {
    for (const upstream of this.observed) upstream.policies.breaker?.state();
  }

  /** Scrape: one bulkhead gauge from each observed bulkhead's `state()`. */
  collectBulkheads(
    key: 'bulkheadInUse' | 'bulkheadQueued' | 'bulkheadMaxConcurrent' | 'bulkheadMaxQueue',
  ): void {
    const gauge = this.m[key];
    gauge.reset();
    for (const upstream of this.observed) {
      const bulkhead = upstream.policies.bulkhead;
      if (bulkhead === undefined) continue;
      const s = bulkhead.state();
      const value =
        key === 'bulkheadInUse'
          ? s.inUse
          : key === 'bulkheadQueued'
            ? s.queued
            : key === 'bulkheadMaxConcurrent'
              ? s.maxConcurrent
              : s.maxQueue;
      gauge.set({ dependency: upstream.name }, value);
    }
  }
}
