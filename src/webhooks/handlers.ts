/**
 * Webhook handlers: what runs, as a job, for each stored event of a source and type.
 */
import { POSITIVE_INTEGER, finite, invalidOption, nonEmptyString } from '../core/index.js';
import { CircuitBreakerPolicy, type CircuitBreakerOptions } from '../policy/index.js';
import type { WebhookSource } from './source.js';

/** What a handler gets for one run. Times are ms since the epoch. */
export interface WebhookContext<E = unknown> {
  /** The parsed body (the schema's output when the source has one), as stored when it was received. */
  event: E;
  /** The sender's event id: the key to make every side effect idempotent on. */
  eventId: string;
  eventType: string;
  /** The event's own time from its payload, or null; events may arrive out of order, so compare this. */
  occurredAt: number | null;
  /** When the gateway received (and stored) the delivery. */
  receivedAt: number;
  source: string;
  /** Aborts when the run must stop (the handler's timeout, a cancel, shutdown): pass it to every I/O call. */
  signal: AbortSignal;
  /** This run's number, 1 for the first. */
  attempt: number;
  /** The job running this handler. */
  jobId: string;
}

/** Handles one event. Throw to fail the run: transient failures are retried with backoff, others dead-letter. */
export type WebhookHandler<E = unknown> = (context: WebhookContext<E>) => unknown;

/** Options of {@link onWebhook}; validated at once (a RangeError names the option). */
export interface WebhookHandlerOptions {
  /** Most runs per event, the first included (integer >= 1, default 5, as jobs). */
  maxAttempts?: number;
  /** Per-run limit in ms (integer >= 1); the run's signal aborts with `timeout` and the run is retried. */
  timeoutMs?: number;
  /**
   * A circuit breaker around the handler (its downstream): a breaker of your own (shared with other code that
   * calls the same dependency) or options for a new one. While it is open, runs fail at once with
   * `circuit_open` and are retried no earlier than when it turns half-open; the dependency is not called.
   */
  breaker?: CircuitBreakerPolicy | CircuitBreakerOptions;
}

/** Defaults of {@link WebhookHandlerOptions}. */
export const WEBHOOK_HANDLER_DEFAULTS = { maxAttempts: 5 } as const;

/** A declared handler. Declare it with {@link onWebhook}. */
export interface WebhookHandlerDefinition<E = unknown> {
  readonly source: string;
  /** An event type, or `*` for every type without a handler of its own. */
  readonly eventType: string;
  readonly maxAttempts: number;
  readonly timeoutMs: number | undefined;
  readonly breaker: CircuitBreakerPolicy | undefined;
  /** Runs the handler (inside the breaker, when there is one). */
  run(context: WebhookContext<E>): Promise<unknown>;
}

/** A handler of any event type, as the ingress holds them side by side. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- each handler has its own event type
export type AnyWebhookHandler = WebhookHandlerDefinition<any>;

/**
 * Declares the handler of `eventType` (or `*`) events of `source`. Exactly one handler runs per event: the one
 * of its type, else the source's `*` handler; an event with neither is stored and its job completes with
 * `{ handled: false }` (replay it once a handler exists).
 *
 * The handler runs as a job, after the delivery was acknowledged: it is retried with backoff on transient
 * failures, dead-lettered after `maxAttempts`, and may run more than once for one event (a crash mid-run, a
 * replay): make its effects idempotent on `eventId`.
 *
 * @throws RangeError naming the option when an option is invalid.
 */
export function onWebhook<E = unknown>(
  source: WebhookSource<E> | string,
  eventType: string,
  handler: WebhookHandler<E>,
  options: WebhookHandlerOptions = {},
): WebhookHandlerDefinition<E> {
  const sourceName = typeof source === 'string' ? source : source?.name;
  nonEmptyString('onWebhook', 'source', sourceName);
  const owner = `onWebhook(${sourceName})`;
  nonEmptyString(owner, 'eventType', eventType);
  if (typeof handler !== 'function') throw invalidOption(owner, 'handler', 'a function', handler);
  if (typeof options !== 'object' || options === null) {
    throw invalidOption(owner, 'options', 'an object or left out', options);
  }
  const maxAttempts = finite(
    owner,
    'maxAttempts',
    options.maxAttempts ?? WEBHOOK_HANDLER_DEFAULTS.maxAttempts,
    { ...POSITIVE_INTEGER, max: 2_147_483_647 },
  );
  const timeoutMs =
    options.timeoutMs === undefined
      ? undefined
      : finite(owner, 'timeoutMs', options.timeoutMs, POSITIVE_INTEGER);
  const breaker =
    options.breaker === undefined || options.breaker instanceof CircuitBreakerPolicy
      ? options.breaker
      : new CircuitBreakerPolicy({ name: `webhook:${sourceName}:${eventType}`, ...options.breaker });
  return Object.freeze({
    source: sourceName,
    eventType,
    maxAttempts,
    timeoutMs,
    breaker,
    run:
      breaker === undefined
        ? async (context: WebhookContext<E>) => handler(context)
        : (context: WebhookContext<E>) =>
            breaker.execute(({ signal }) => handler({ ...context, signal }), context.signal),
  });
}
