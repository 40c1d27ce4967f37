import Fastify from 'fastify';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { EventSource, FakeClock } from '../../core/index.js';
import { rateLimit } from '../../policy/index.js';
import type { JobStats } from '../../store/index.js';
import type { WebhookReceipt, WebhookRejection } from '../../webhooks/index.js';
import { METRIC_FAMILIES, methodLabel, statusClass } from './catalogue.js';
import { createMetrics, metricsRoutes } from './metrics.js';
import type { ObservedJobs } from './jobs.js';
import { parseExposition, series } from './test-support.js';
import { expectOptionsError } from '../../../test/support/options.js';

const SNAKE = /^[a-z][a-z0-9]*(_[a-z0-9]+)*$/;
const families = Object.values(METRIC_FAMILIES);

describe('metric names and units (Prometheus naming conventions)', () => {
  it('are snake_case, unique, counters end in _total and nothing else does', () => {
    const names = families.map((f) => f.name);
    expect(new Set(names).size).toBe(names.length);
    for (const f of families) {
      expect(f.name).toMatch(SNAKE);
      expect(f.name.endsWith('_total'), f.name).toBe(f.type === 'counter');
      expect(f.help.length, f.name).toBeGreaterThan(10);
    }
  });

  it('times are in seconds (base unit), named so; no ms, no other time unit', () => {
    for (const f of families) {
      expect(f.name, f.name).not.toMatch(/_(ms|millis|milliseconds|minutes|hours|micro\w*)(_|$)/);
      if (f.type === 'histogram') expect(f.name).toMatch(/_seconds$/);
    }
    expect(METRIC_FAMILIES.jobOldestPendingAge.name).toBe('job_oldest_pending_age_seconds');
    for (const f of families) {
      if (f.type !== 'histogram') continue;
      const b = f.buckets!;
      expect([...b].sort((x, y) => x - y)).toEqual(b);
      // Seconds, not ms: the largest bound is an hour at most, the smallest a few ms.
      expect(b[0]).toBeLessThan(0.02);
      expect(b.at(-1)).toBeLessThanOrEqual(3600);
    }
  });

  it('labels are snake_case, low-cardinality names: never ids, keys or paths', () => {
    for (const f of families) {
      for (const label of f.labels) {
        expect(label).toMatch(SNAKE);
        expect(label, `${f.name}{${label}}`).not.toMatch(/(^|_)(id|key|path|url|le)$/);
      }
    }
    expect(methodLabel('GET')).toBe('GET');
    expect(methodLabel('PROPFIND')).toBe('OTHER');
    expect([statusClass(204), statusClass(404), statusClass(503), statusClass(undefined)]).toEqual([
      '2xx',
      '4xx',
      '5xx',
      'none',
    ]);
  });

  it('a fresh instance serves every family, prefixed breakwater_, typed, with no sample yet', async () => {
    const metrics = createMetrics();
    expect(metrics.contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
    const parsed = parseExposition(await metrics.scrape());
    expect([...parsed.keys()]).toEqual(families.map((f) => `breakwater_${f.name}`));
    for (const f of families) {
      const got = parsed.get(`breakwater_${f.name}`)!;
      expect([got.type, got.help, got.samples]).toEqual([f.type, f.help, []]);
    }
  });
});

describe('createMetrics options', () => {
  it('takes a registry and a prefix; two instances on one registry need distinct prefixes', async () => {
    const registry = new Registry();
    createMetrics({ registry, prefix: 'gw_' });
    expect(() => createMetrics({ registry, prefix: 'gw_' })).toThrow(/already been registered/);
    createMetrics({ registry, prefix: '' });
    const names = [...parseExposition(await registry.metrics()).keys()];
    expect(names).toContain('gw_circuit_breaker_state');
    expect(names).toContain('circuit_breaker_state');
  });

  it('a bad option is a RangeError naming it', () => {
    expect(() => createMetrics({ prefix: '9x' })).toThrow(/prefix/);
    expect(() => createMetrics({ collectTimeoutMs: 0 })).toThrow(/collectTimeoutMs/);
    expect(() => createMetrics({ registry: {} as Registry })).toThrow(/registry/);
    expect(() => createMetrics({ clock: {} as FakeClock })).toThrow(/clock/);
  });

  it('reports every bad option at once in one OptionsError', () => {
    expectOptionsError(() => createMetrics({ registry: {} as Registry, prefix: '9x', collectTimeoutMs: 0 }), {
      owner: 'createMetrics',
      options: ['registry', 'prefix', 'collectTimeoutMs'],
      message:
        'createMetrics: registry must be a prom-client Registry, got an object; prefix must be empty or a ' +
        "metric name prefix ([a-zA-Z_:][a-zA-Z0-9_:]*), got '9x'; collectTimeoutMs must be a finite number " +
        '> 0, got 0',
    });
  });
});

/** A jobs runtime that emits nothing, over a stats source the test controls. */
function quietJobs(stats: () => Promise<JobStats>): ObservedJobs & { calls: number } {
  const none = { dispose() {} };
  const jobs = {
    calls: 0,
    onStarted: () => none,
    onRunEnded: () => none,
    stats: () => {
      jobs.calls++;
      return stats();
    },
  };
  return jobs;
}

const STATS: JobStats = {
  counts: { pending: 4, in_progress: 1, input_required: 2, completed: 7, failed: 2, canceled: 0 },
  oldestPendingAgeMs: 2_500,
};

describe('job gauges read on scrape', () => {
  it('jobs by status, queue depth and oldest pending age come from stats()', async () => {
    const metrics = createMetrics();
    metrics.observeJobs(quietJobs(async () => STATS));
    const parsed = parseExposition(await metrics.scrape());
    expect(series(parsed, 'breakwater_jobs')).toEqual({
      'status="pending"': 4,
      'status="in_progress"': 1,
      'status="input_required"': 2,
      'status="completed"': 7,
      'status="failed"': 2,
      'status="canceled"': 0,
    });
    expect(series(parsed, 'breakwater_job_queue_depth')).toEqual({ '': 4 });
    expect(series(parsed, 'breakwater_job_oldest_pending_age_seconds')).toEqual({ '': 2.5 });
  });

  it('a hung store never hangs a scrape: left out after collectTimeoutMs, counted, asked once', async () => {
    const clock = new FakeClock();
    const metrics = createMetrics({ clock, collectTimeoutMs: 1_000 });
    let answer!: (stats: JobStats) => void;
    const hung = new Promise<JobStats>((resolve) => (answer = resolve));
    const jobs = quietJobs(() => hung);
    metrics.observeJobs(jobs);
    for (const errors of [1, 2]) {
      let text: string | undefined;
      const scraping = metrics.scrape().then((t) => (text = t));
      await clock.tickAsync(999);
      expect(text).toBeUndefined();
      await clock.tickAsync(1);
      await scraping;
      const parsed = parseExposition(text!);
      expect(series(parsed, 'breakwater_jobs')).toEqual({});
      expect(series(parsed, 'breakwater_job_queue_depth')).toEqual({});
      expect(series(parsed, 'breakwater_job_oldest_pending_age_seconds')).toEqual({});
      expect(series(parsed, 'breakwater_metrics_collect_errors_total')).toEqual({
        'collector="jobs"': errors,
      });
    }
    // The store was asked once: the second scrape waited on the same call.
    expect(jobs.calls).toBe(1);
    answer({ ...STATS, oldestPendingAgeMs: null });
    await clock.tickAsync(0);
    const parsed = parseExposition(await metrics.scrape());
    expect(series(parsed, 'breakwater_job_oldest_pending_age_seconds')).toEqual({ '': 0 });
    expect(series(parsed, 'breakwater_metrics_collect_errors_total')).toEqual({ 'collector="jobs"': 2 });
    expect(clock.pendingTimers()).toBe(0);
  });

  it('a failing store is counted the same way, in the scrape it failed', async () => {
    const metrics = createMetrics();
    metrics.observeJobs(quietJobs(() => Promise.reject(new Error('database is locked'))));
    const parsed = parseExposition(await metrics.scrape());
    expect(series(parsed, 'breakwater_jobs')).toEqual({});
    expect(series(parsed, 'breakwater_metrics_collect_errors_total')).toEqual({ 'collector="jobs"': 1 });
  });

  it('one jobs runtime at a time; after dispose its gauges are left out and another may be observed', async () => {
    const metrics = createMetrics();
    const first = metrics.observeJobs(quietJobs(async () => STATS));
    expect(() => metrics.observeJobs(quietJobs(async () => STATS))).toThrow(/observed already/);
    first.dispose();
    first.dispose();
    expect(series(parseExposition(await metrics.scrape()), 'breakwater_jobs')).toEqual({});
    metrics.observeJobs(quietJobs(async () => STATS)).dispose();
  });
});

describe('rate-limit decisions', () => {
  it('allowed and denied per limiter, zero from the start; nothing counted after dispose', async () => {
    const clock = new FakeClock();
    const metrics = createMetrics();
    const policy = rateLimit({
      name: 'checkout',
      algorithm: { type: 'fixed_window', limit: 2, windowMs: 60_000 },
      clock,
    });
    const subscription = metrics.observeRateLimit(policy);
    expect(series(parseExposition(await metrics.scrape()), 'breakwater_rate_limit_decisions_total')).toEqual({
      'decision="allowed",limiter="checkout"': 0,
      'decision="denied",limiter="checkout"': 0,
    });
    for (const key of ['tenant-a', 'tenant-a', 'tenant-a', 'tenant-b']) await policy.consume(key);
    subscription.dispose();
    await policy.consume('tenant-b');
    expect(series(parseExposition(await metrics.scrape()), 'breakwater_rate_limit_decisions_total')).toEqual({
      'decision="allowed",limiter="checkout"': 3,
      'decision="denied",limiter="checkout"': 1,
    });
  });
});

describe('webhook labels', () => {
  it('a source nobody declared and a code outside the stable set count as _unknown, never as themselves', async () => {
    const metrics = createMetrics();
    const receipts = new EventSource<WebhookReceipt>();
    const rejections = new EventSource<WebhookRejection>();
    metrics.observeWebhooks({ sources: ['shop'], onReceipt: receipts.on, onRejected: rejections.on });
    rejections.emit({ source: undefined, code: 'not_found', status: 404 });
    rejections.emit({ source: 'shop', code: 'FST_ERR_SOMETHING_NEW', status: 400 });
    rejections.emit({ source: 'shop', code: 'invalid_signature', status: 401 });
    expect(series(parseExposition(await metrics.scrape()), 'breakwater_webhook_rejections_total')).toEqual({
      'code="not_found",source="_unknown"': 1,
      'code="_unknown",source="shop"': 1,
      'code="invalid_signature",source="shop"': 1,
    });
  });
});

describe('GET /metrics', () => {
  it('answers the exposition with the registry content type, not cached', async () => {
    const metrics = createMetrics();
    const app = Fastify();
    await app.register(metricsRoutes(metrics));
    const answer = await app.inject({ method: 'GET', url: '/metrics' });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(parseExposition(answer.body).size).toBe(families.length);
    await app.close();
  });
});
