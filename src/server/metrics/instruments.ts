/**
 * The prom-client objects of {@link METRIC_FAMILIES}, built once per `createMetrics` on its registry, and the
 * bounded scrape-time collections (a scrape never waits longer than `collectTimeoutMs` for a store).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Clock, TimerHandle } from '../../core/index.js';
import { METRIC_FAMILIES, type FamilyKey, type MetricFamily } from './catalogue.js';

type InstrumentOf<F extends MetricFamily> = F['type'] extends 'counter'
  ? Counter<string>
  : F['type'] extends 'gauge'
    ? Gauge<string>
    : Histogram<string>;

/** One prom-client object per family, under the family's key. */
export type Instruments = { readonly [K in FamilyKey]: InstrumentOf<(typeof METRIC_FAMILIES)[K]> };

/** A scrape-time hook of a family (fills a gauge from current state); may be async. */
export type Collect = () => void | Promise<void>;

/**
 * Registers every family on `registry` under `prefix`, with the scrape-time hooks given.
 * @throws Error (prom-client's) when a family of that name is registered on `registry` already.
 */
export function createInstruments(
  registry: Registry,
  prefix: string,
  collects: Partial<Record<FamilyKey, Collect>>,
): Instruments {
  const built: Partial<Record<FamilyKey, unknown>> = {};
  for (const key of Object.keys(METRIC_FAMILIES) as FamilyKey[]) {
    const family: MetricFamily = METRIC_FAMILIES[key];
    const config = {
      name: prefix + family.name,
      help: family.help,
      labelNames: family.labels,
      registers: [registry],
      ...(collects[key] === undefined ? {} : { collect: collects[key] }),
    };
    built[key] =
      family.type === 'counter'
        ? new Counter(config)
        : family.type === 'gauge'
          ? new Gauge(config)
          : new Histogram({ ...config, buckets: [...family.buckets!] });
  }
  return built as Instruments;
}

/**
 * Scrape-time reads bounded in time: a read that rejects or has not answered within `timeoutMs` counts one
 * `metrics_collect_errors_total{collector}` and yields `undefined`, so the scrape goes on without it.
 */
export class BoundedCollections {
  private readonly pending = new Set<Promise<unknown>>();

  constructor(
    private readonly clock: Clock,
    private readonly timeoutMs: number,
    private readonly errors: Counter<string>,
  ) {}

  /** Runs `read`, bounded; resolves its value or `undefined` (never rejects). */
  run<T>(collector: string, read: () => Promise<T>): Promise<T | undefined> {
    let timer: TimerHandle | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = this.clock.setTimeout(() => {
        timer = undefined;
        this.errors.inc({ collector });
        resolve(undefined);
      }, this.timeoutMs);
    });
    const answered = Promise.resolve()
      .then(read)
      .catch(() => {
        if (timer === undefined) return undefined; // already counted as a timeout
        this.errors.inc({ collector });
        return undefined;
      });
    const outcome = Promise.race([answered, late]).finally(() => {
      if (timer !== undefined) this.clock.clearTimeout(timer);
      this.pending.delete(outcome);
    });
    this.pending.add(outcome);
    return outcome;
  }

  /** Resolves once every read started so far has ended (answered, failed or timed out). */
  async settled(): Promise<void> {
    await Promise.all(this.pending);
  }
}
