/**
 * Webhook handlers: what runs, as a job, for each stored event of a source and type.
 */
import { OptionsError, defineOptions, o, type OptionProblem } from '../core/index.js';
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

/** Options of {@link onWebhook}; validated when the handler is declared (an OptionsError names every bad one). */
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

/** Checks {@link WebhookHandlerOptions} and applies {@link WEBHOOK_HANDLER_DEFAULTS}. */
const SHAPE = {
  maxAttempts: o.number().int().min(1).max(2_147_483_647).default(WEBHOOK_HANDLER_DEFAULTS.maxAttempts),
  timeoutMs: o.number().int().min(1).optional(),
  breaker: o
    .record<CircuitBreakerPolicy | CircuitBreakerOptions>('a CircuitBreakerPolicy or its options')
    .optional(),
};

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
 * @throws OptionsError (`RangeError`, `invalid_options`) naming every bad argument and option; its owner is
 *   `onWebhook(<source>)`, or `onWebhook` when the source itself is bad.
 */
export function onWebhook<E = unknown>(
  source: WebhookSource<E> | string,
  eventType: string,
  handler: WebhookHandler<E>,
  options: WebhookHandlerOptions = {},
): WebhookHandlerDefinition<E> {
  const sourceName = typeof source === 'string' ? source : source?.name;
  const problems: OptionProblem[] = [];
  if (typeof sourceName !== 'string' || sourceName === '') {
    problems.push({ option: 'source', rule: 'a non-empty string', value: sourceName });
  }
  if (typeof eventType !== 'string' || eventType === '') {
    problems.push({ option: 'eventType', rule: 'a non-empty string', value: eventType });
  }
  if (typeof handler !== 'function') problems.push({ option: 'handler', rule: 'a function', value: handler });
  const owner = problems[0]?.option === 'source' ? 'onWebhook' : `onWebhook(${sourceName})`;
  let parsed: {
    maxAttempts: number;
    timeoutMs: number | undefined;
    breaker: WebhookHandlerOptions['breaker'];
  };
  try {
    // Made per call for the owner's name: once per declaration, never per event.
    parsed = defineOptions<WebhookHandlerOptions>()(owner, SHAPE)(options);
  } catch (error) {
    if (!(error instanceof OptionsError)) throw error;
    throw new OptionsError(owner, [...problems, ...error.problems]);
  }
  if (problems.length > 0) throw new OptionsError(owner, problems);
  const { maxAttempts, timeoutMs } = parsed;
  const breaker =
    parsed.breaker === undefined || parsed.breaker instanceof CircuitBreakerPolicy
      ? parsed.breaker
      : new CircuitBreakerPolicy({ name: `webhook:${sourceName}:${eventType}`, ...parsed.breaker });
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
