/**
 * The dashboard's charts of the last minutes: counts and latencies per interval, kept in memory for a
 * window (default: 2 s intervals over 10 minutes). Fed by the events the parts already emit (an upstream's
 * `onResult`, the webhook ingress's receipts and rejections, the AI gateway's request lines, the worker's run
 * ends), not by scraping, so each point is exact. No timer: intervals are rolled on the clock's time when
 * something is recorded or read.
 */
import { defineOptions, o, type Clock, type Disposable } from '../../core/index.js';
import type { AiRequestLog } from '../../ai/index.js';
import type { JobRunEndedEvent } from '../../jobs/index.js';
import type { UpstreamResultEvent } from '../../upstream/index.js';
import type { WebhookReceipt, WebhookRejection } from '../../webhooks/index.js';
import { iso } from './views.js';

/** Options of {@link createSeries}; validated at once (an OptionsError names every bad option). */
export interface SeriesOptions {
  /** Length of one point, ms (integer >= 100, default 2 000). */
  intervalMs?: number;
  /** How far back points are kept, ms (integer, at least one interval, default 600 000: 10 minutes). */
  windowMs?: number;
  /** Most latencies kept per interval for its percentiles (integer >= 1, default 5 000; past it, a uniform sample). */
  maxSamples?: number;
  clock?: Clock;
  /** Uniform numbers in [0, 1) for the latency sample (default `Math.random`). */
  random?: () => number;
}

/** Defaults of {@link SeriesOptions}. */
export const SERIES_DEFAULTS = { intervalMs: 2_000, windowMs: 600_000, maxSamples: 5_000 } as const;

/** Checks {@link SeriesOptions} and applies {@link SERIES_DEFAULTS}. */
const parseOptions = defineOptions<SeriesOptions>()(
  'createSeries',
  {
    intervalMs: o.number().int().min(100).default(SERIES_DEFAULTS.intervalMs),
    windowMs: o.number().int().min(1).default(SERIES_DEFAULTS.windowMs),
    maxSamples: o.number().int().min(1).default(SERIES_DEFAULTS.maxSamples),
    clock: o.clock(),
    random: o.fn<() => number>().default(Math.random),
  },
  ({ intervalMs, windowMs }, report) => {
    if (Number.isInteger(intervalMs) && intervalMs >= 100 && windowMs < intervalMs)
      report('windowMs', `an integer >= intervalMs (${intervalMs})`, windowMs);
  },
);

/** Codes counted as rejections: load turned away by a policy, before the protected call was made. */
export const REJECTION_CODES = [
  'circuit_open',
  'bulkhead_full',
  'rate_limited',
  'spend_limited',
  'overloaded',
] as const;
export type RejectionCode = (typeof REJECTION_CODES)[number];

/** One interval, as `GET /admin/api/series` answers it. */
export interface SeriesPoint {
  /** Start of the interval (ISO 8601); it covers `[at, at + interval_ms)`. */
  at: string;
  /** Upstream calls that ended in the interval (successes, failures and rejections alike). */
  upstream_calls: number;
  /** Upstream calls that failed, rejections included. */
  upstream_failures: number;
  /** Webhook deliveries answered (accepted, duplicate or rejected). */
  webhook_deliveries: number;
  /** AI gateway requests answered. */
  ai_requests: number;
  /** Job runs that ended (completed, failed, retrying, canceled). */
  job_runs: number;
  /** Requests turned away by a policy, by code: upstream calls, webhook deliveries and AI requests. */
  rejections: Record<RejectionCode, number>;
  /** Upstream call latency in the interval, ms (nearest-rank percentiles); null without calls. */
  latency_ms: { p50: number; p95: number; max: number } | null;
}

/** What `GET /admin/api/series` answers. */
export interface SeriesView {
  interval_ms: number;
  window_ms: number;
  /** Complete intervals since recording started, oldest first, at most `window_ms / interval_ms`. */
  points: SeriesPoint[];
}

/** The recorder of one gateway. */
export interface Series {
  observeUpstream(upstream: {
    onResult(listener: (event: UpstreamResultEvent) => void): Disposable;
  }): Disposable;
  observeWebhooks(ingress: {
    onReceipt(listener: (receipt: WebhookReceipt) => void): Disposable;
    onRejected(listener: (rejection: WebhookRejection) => void): Disposable;
  }): Disposable;
  observeAi(ai: { onRequest(listener: (line: AiRequestLog) => void): Disposable }): Disposable;
  observeJobs(jobs: { onRunEnded(listener: (event: JobRunEndedEvent) => void): Disposable }): Disposable;
  /** The complete intervals of the window, oldest first. */
  view(): SeriesView;
}

interface Bucket {
  start: number;
  upstreamCalls: number;
  upstreamFailures: number;
  webhookDeliveries: number;
  aiRequests: number;
  jobRuns: number;
  rejections: Record<RejectionCode, number>;
  latencies: number[];
  /** Latencies seen in the interval (the sample holds at most `maxSamples` of them). */
  seen: number;
  max: number;
}

/**
 * Creates a recorder.
 * @throws OptionsError (`RangeError`, `invalid_options`, owner `createSeries`) naming every bad option.
 */
export function createSeries(options: SeriesOptions = {}): Series {
  const { intervalMs, windowMs, maxSamples, clock, random } = parseOptions(options);
  const slots = Math.floor(windowMs / intervalMs);
  const startOf = (now: number) => now - (now % intervalMs);
  const firstStart = startOf(clock.now());
  const done: Bucket[] = [];
  let current = emptyBucket(firstStart);

  /** Closes the intervals that have ended (empty ones included), keeping the window's worth. */
  const roll = (): Bucket => {
    const now = startOf(clock.now());
    if (now === current.start) return current;
    // After a long silence only the window's last intervals matter.
    let next = Math.max(current.start + intervalMs, now - slots * intervalMs);
    if (next === current.start + intervalMs) done.push(current);
    for (; next < now; next += intervalMs) done.push(emptyBucket(next));
    if (done.length > slots) done.splice(0, done.length - slots);
    current = emptyBucket(now);
    return current;
  };

  const reject = (bucket: Bucket, code: string | undefined): void => {
    if (code !== undefined && code in bucket.rejections) bucket.rejections[code as RejectionCode]++;
  };

  const latency = (bucket: Bucket, ms: number): void => {
    bucket.seen++;
    bucket.max = Math.max(bucket.max, ms);
    if (bucket.latencies.length < maxSamples) bucket.latencies.push(ms);
    else {
      // Reservoir sampling: every latency of the interval is kept with the same chance.
      const slot = Math.floor(random() * bucket.seen);
      if (slot < maxSamples) bucket.latencies[slot] = ms;
    }
  };

  return {
    observeUpstream: (upstream) =>
      upstream.onResult((event) => {
        const bucket = roll();
        bucket.upstreamCalls++;
        if (event.code !== undefined) {
          bucket.upstreamFailures++;
          reject(bucket, event.code);
        }
        latency(bucket, event.durationMs);
      }),
    observeWebhooks: (ingress) =>
      all([
        ingress.onReceipt(() => {
          roll().webhookDeliveries++;
        }),
        ingress.onRejected((rejection) => {
          const bucket = roll();
          bucket.webhookDeliveries++;
          reject(bucket, rejection.code);
        }),
      ]),
    observeAi: (ai) =>
      ai.onRequest((line) => {
        const bucket = roll();
        bucket.aiRequests++;
        reject(bucket, line.outcome);
      }),
    observeJobs: (jobs) =>
      jobs.onRunEnded((event) => {
        if (event.outcome === 'released' || event.outcome === 'lost') return;
        roll().jobRuns++;
      }),
    view: () => {
      roll();
      return { interval_ms: intervalMs, window_ms: windowMs, points: done.map(toPoint) };
    },
  };
}

function emptyBucket(start: number): Bucket {
  const rejections = Object.fromEntries(REJECTION_CODES.map((code) => [code, 0])) as Record<
    RejectionCode,
    number
  >;
  return {
    start,
    upstreamCalls: 0,
    upstreamFailures: 0,
    webhookDeliveries: 0,
    aiRequests: 0,
    jobRuns: 0,
    rejections,
    latencies: [],
    seen: 0,
    max: 0,
  };
}

function toPoint(bucket: Bucket): SeriesPoint {
  const sorted = [...bucket.latencies].sort((a, b) => a - b);
  // Nearest rank (the smallest value with at least p% of the sample at or below it).
  const rank = (p: number) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
  return {
    at: iso(bucket.start),
    upstream_calls: bucket.upstreamCalls,
    upstream_failures: bucket.upstreamFailures,
    webhook_deliveries: bucket.webhookDeliveries,
    ai_requests: bucket.aiRequests,
    job_runs: bucket.jobRuns,
    rejections: { ...bucket.rejections },
    latency_ms:
      sorted.length === 0 ? null : { p50: round(rank(50)), p95: round(rank(95)), max: round(bucket.max) },
  };
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

function all(subscriptions: readonly Disposable[]): Disposable {
  return { dispose: () => subscriptions.forEach((s) => s.dispose()) };
}
