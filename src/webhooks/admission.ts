/**
 * Admission control of the ingress (docs/webhooks.md#status-codes): a per-source rate limit (429) and a
 * backlog limit (503), both decided before the body is read, both with `Retry-After`.
 */
import { BreakwaterError, type Clock } from '../core/index.js';
import {
  MemoryRateLimitStore,
  RateLimitPolicy,
  rateLimitedError,
  type RateLimitStore,
} from '../policy/index.js';
import type { AnyWebhookSource } from './source.js';

/**
 * The inbox backlog of one source (events stored whose handling has not finished), read from the store at
 * most once per `cacheMs` so a storm does not cost one count query per delivery. Between reads, each delivery
 * accepted by this process is added to the last count, so a burst cannot run past the limit while the count
 * is cached; deliveries accepted by other processes, and events handled since, show up at the next read. The
 * estimate therefore errs high for at most `cacheMs`, never low for this process's own accepts.
 *
 * A failing read keeps the last count (0 before the first) and is reported as a process warning named
 * `BreakwaterWebhooksWarning`: the backlog limit is a load shedder, and a store that cannot count will
 * also fail the insert, which answers 503 on its own.
 */
export class BacklogGauge {
  private count: number | undefined;
  private readAt = -Infinity;
  private acceptedSinceRead = 0;
  private acceptedTotal = 0;
  private refreshing: Promise<void> | undefined;

  constructor(
    private readonly read: () => Promise<number>,
    private readonly cacheMs: number,
    private readonly clock: Clock,
  ) {}

  /**
   * The current estimate. Within `cacheMs` of the last read it is the cached count plus this process's accepts
   * since (errs high, never low). Once the count is older, the caller waits for a fresh read (one indexed
   * count, shared by every caller meanwhile): a count of any age must not refuse the first delivery after a
   * quiet spell in which the backlog drained.
   */
  estimate(): number | Promise<number> {
    if (this.clock.now() - this.readAt < this.cacheMs) return this.value();
    this.refreshing ??= this.refresh();
    return this.refreshing.then(() => this.value());
  }

  /** Counts one delivery this process stored. */
  accepted(): void {
    this.acceptedTotal++;
    this.acceptedSinceRead++;
  }

  private value(): number {
    return (this.count ?? 0) + this.acceptedSinceRead;
  }

  private async refresh(): Promise<void> {
    const before = this.acceptedTotal;
    try {
      const count = await this.read();
      this.count = count;
      // Accepts that finished while the count was read may be in it too: counting them again errs high.
      this.acceptedSinceRead = this.acceptedTotal - before;
    } catch (error) {
      this.count ??= 0;
      warn('reading the webhook backlog failed', error);
    } finally {
      this.readAt = this.clock.now();
      this.refreshing = undefined;
    }
  }
}

/** The admission checks of one source: rate limit, then backlog. */
export class Admission {
  private readonly limiter: RateLimitPolicy | undefined;
  private readonly backlog: BacklogGauge | undefined;

  constructor(
    private readonly source: AnyWebhookSource,
    options: {
      backlog: (source: string) => Promise<number>;
      backlogCacheMs: number;
      rateLimitStore: RateLimitStore;
      clock: Clock;
    },
  ) {
    this.limiter =
      source.rateLimit === undefined
        ? undefined
        : new RateLimitPolicy({
            name: `webhooks:${source.name}`,
            algorithm: source.rateLimit,
            store: options.rateLimitStore,
            clock: options.clock,
          });
    this.backlog =
      source.maxBacklog === undefined
        ? undefined
        : new BacklogGauge(() => options.backlog(source.name), options.backlogCacheMs, options.clock);
  }

  /**
   * Resolves with `undefined` when the delivery may go on, or the error to answer with: `rate_limited` (429)
   * or `overloaded` (503), each with `retryAfterMs`.
   */
  async check(): Promise<BreakwaterError | undefined> {
    if (this.limiter !== undefined) {
      const decision = await this.limiter.consume(this.limiter.name);
      // retry_after_ms is >= 1 when denied, so Retry-After (whole seconds, rounded up) is never 0.
      if (!decision.allowed) return rateLimitedError(decision, this.limiter.name);
    }
    if (this.backlog !== undefined) {
      const backlog = await this.backlog.estimate();
      const max = this.source.maxBacklog!;
      if (backlog >= max) {
        return BreakwaterError.withoutStack('overloaded', {
          message: `The ${this.source.name} webhook backlog is full (${max} events waiting); try again in about ${Math.ceil(this.source.backlogRetryAfterMs / 1000)} seconds.`,
          source: `webhooks:${this.source.name}`,
          retryAfterMs: this.source.backlogRetryAfterMs,
          details: { max_backlog: max },
        });
      }
    }
    return undefined;
  }

  /** Counts a stored delivery towards the backlog estimate. */
  accepted(): void {
    this.backlog?.accepted();
  }
}

/** A fresh memory store for the per-source limits of one ingress. */
export function defaultRateLimitStore(): RateLimitStore {
  return new MemoryRateLimitStore();
}

/** Reports a failure the ingress survives, as a process warning named `BreakwaterWebhooksWarning`. */
export function warn(message: string, error: unknown): void {
  const warning = new Error(
    `webhooks: ${message}: ${error instanceof Error ? error.message : String(error)}`,
    {
      cause: error,
    },
  );
  warning.name = 'BreakwaterWebhooksWarning';
  process.emitWarning(warning);
}
