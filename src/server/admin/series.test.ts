import { describe, expect, it } from 'vitest';
import { EventSource, FakeClock } from '../../core/index.js';
import type { AiRequestLog } from '../../ai/index.js';
import type { JobRunEndedEvent } from '../../jobs/index.js';
import type { UpstreamResultEvent } from '../../upstream/index.js';
import type { WebhookReceipt, WebhookRejection } from '../../webhooks/index.js';
import { createSeries } from './series.js';
import { expectOptionsError } from '../../../test/support/options.js';

const T0 = Date.UTC(2026, 0, 1, 12, 0, 0);

function sources() {
  const results = new EventSource<UpstreamResultEvent>();
  const receipts = new EventSource<WebhookReceipt>();
  const rejections = new EventSource<WebhookRejection>();
  const lines = new EventSource<AiRequestLog>();
  const runs = new EventSource<JobRunEndedEvent>();
  return {
    results,
    receipts,
    rejections,
    lines,
    runs,
    upstream: { onResult: results.on },
    webhooks: { onReceipt: receipts.on, onRejected: rejections.on },
    ai: { onRequest: lines.on },
    jobs: { onRunEnded: runs.on },
  };
}

const call = (durationMs: number, code?: UpstreamResultEvent['code']): UpstreamResultEvent => ({
  name: 'gift',
  method: 'GET',
  path: '/x',
  status: code === undefined ? 200 : undefined,
  code,
  attempts: 1,
  durationMs,
});

const zeroRejections = {
  circuit_open: 0,
  bulkhead_full: 0,
  rate_limited: 0,
  spend_limited: 0,
  overloaded: 0,
};

describe('the dashboard series', () => {
  it('counts each interval exactly: calls, failures, rejections by code, latency percentiles', () => {
    const clock = new FakeClock(T0);
    const s = sources();
    const series = createSeries({ clock, intervalMs: 1_000, windowMs: 5_000 });
    series.observeUpstream(s.upstream);
    series.observeWebhooks(s.webhooks);
    series.observeAi(s.ai);
    series.observeJobs(s.jobs);

    for (const ms of [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]) s.results.emit(call(ms));
    s.results.emit(call(1, 'circuit_open'));
    s.results.emit(call(250, 'timeout'));
    s.receipts.emit({ source: 'payments', duplicate: true } as WebhookReceipt);
    s.rejections.emit({ source: 'payments', code: 'rate_limited', status: 429 });
    s.lines.emit({ outcome: 'spend_limited' } as AiRequestLog);
    s.lines.emit({ outcome: 'ok' } as AiRequestLog);
    s.runs.emit({ outcome: 'completed' } as JobRunEndedEvent);
    s.runs.emit({ outcome: 'released' } as JobRunEndedEvent);
    // Nothing complete yet: the current interval is not a point.
    expect(series.view().points).toEqual([]);

    clock.tick(1_000);
    s.results.emit(call(5));
    clock.tick(2_000);
    expect(series.view()).toEqual({
      interval_ms: 1_000,
      window_ms: 5_000,
      points: [
        {
          at: new Date(T0).toISOString(),
          upstream_calls: 12,
          upstream_failures: 2,
          webhook_deliveries: 2,
          ai_requests: 2,
          job_runs: 1,
          rejections: { ...zeroRejections, circuit_open: 1, rate_limited: 1, spend_limited: 1 },
          // Nearest rank over the 12 latencies 1, 10 … 100, 250.
          latency_ms: { p50: 50, p95: 250, max: 250 },
        },
        {
          at: new Date(T0 + 1_000).toISOString(),
          upstream_calls: 1,
          upstream_failures: 0,
          webhook_deliveries: 0,
          ai_requests: 0,
          job_runs: 0,
          rejections: zeroRejections,
          latency_ms: { p50: 5, p95: 5, max: 5 },
        },
        {
          at: new Date(T0 + 2_000).toISOString(),
          upstream_calls: 0,
          upstream_failures: 0,
          webhook_deliveries: 0,
          ai_requests: 0,
          job_runs: 0,
          rejections: zeroRejections,
          latency_ms: null,
        },
      ],
    });
  });

  it('keeps only the window, also after a long silence', () => {
    const clock = new FakeClock(T0);
    const s = sources();
    const series = createSeries({ clock, intervalMs: 1_000, windowMs: 3_000 });
    series.observeUpstream(s.upstream);
    s.results.emit(call(7));
    clock.tick(10_000);
    s.results.emit(call(8));
    clock.tick(1_000);
    const view = series.view();
    expect(view.points.map((p) => [p.at, p.upstream_calls])).toEqual([
      [new Date(T0 + 8_000).toISOString(), 0],
      [new Date(T0 + 9_000).toISOString(), 0],
      [new Date(T0 + 10_000).toISOString(), 1],
    ]);
    clock.tick(2_000);
    expect(series.view().points.map((p) => [p.at, p.upstream_calls])).toEqual([
      [new Date(T0 + 10_000).toISOString(), 1],
      [new Date(T0 + 11_000).toISOString(), 0],
      [new Date(T0 + 12_000).toISOString(), 0],
    ]);
  });

  it('samples latencies past maxSamples, and refuses bad options by name', () => {
    const clock = new FakeClock(T0);
    const s = sources();
    const series = createSeries({ clock, intervalMs: 1_000, maxSamples: 2, random: () => 0 });
    series.observeUpstream(s.upstream);
    for (const ms of [1, 2, 3, 4]) s.results.emit(call(ms));
    clock.tick(1_000);
    // random() = 0 puts each later latency in slot 0: the sample is [4, 2]; max counts every call.
    expect(series.view().points[0]!.latency_ms).toEqual({ p50: 2, p95: 4, max: 4 });
    expect(() => createSeries({ intervalMs: 50 })).toThrow(/createSeries: intervalMs must be/);
    expect(() => createSeries({ intervalMs: 1_000, windowMs: 500 })).toThrow(
      new RangeError('createSeries: windowMs must be an integer >= intervalMs (1000), got 500'),
    );
  });

  it('reports every bad option at once in one OptionsError', () => {
    expectOptionsError(
      () => createSeries({ intervalMs: 99, windowMs: 0, maxSamples: 1.5, random: 1 as never }),
      {
        owner: 'createSeries',
        options: ['intervalMs', 'windowMs', 'maxSamples', 'random'],
        message:
          'createSeries: intervalMs must be an integer >= 100, got 99; windowMs must be an integer >= 1, got 0; ' +
          'maxSamples must be an integer >= 1, got 1.5; random must be a function, got 1',
      },
    );
  });
});
