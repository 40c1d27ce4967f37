import { BreakwaterError } from '../core/index.js';
import { checkNewJob } from './checks.js';
import type { NewJob } from './jobs.js';

/**
 * The webhook inbox contract (docs/webhooks.md): every accepted delivery is stored once per
 * `(source, eventId)` together with the job that handles it, in one transaction, so a delivery acknowledged
 * with a 2xx is never lost and a redelivery never enqueues a second job. Implemented by the SQLite and
 * PostgreSQL stores next to the `JobStore`; one contract suite (`webhooks-contract.ts`) runs on both.
 *
 * Times are ms since the epoch, as given by the caller (the inbox stores them; it reads no clock of its own
 * for them).
 */

/** Longest `source`, `eventId` and `eventType`, in UTF-16 code units. */
export const MAX_INBOX_KEY_LENGTH = 255;

/** Default and largest page of {@link WebhookInboxStore.listWebhooks}. */
export const INBOX_LIST_DEFAULT_LIMIT = 100;
export const INBOX_LIST_MAX_LIMIT = 1000;

/** A verified delivery, as the ingress pipeline hands it to the inbox. */
export interface InboxDelivery {
  /** The configured source it arrived on (`stripe`, `github`, …): 1..255 characters, no NUL. */
  source: string;
  /** The sender's event id (Standard Webhooks `webhook-id`, Stripe `evt_…`, `X-GitHub-Delivery`): 1..255, no NUL. */
  eventId: string;
  /** The sender's event type (`payment_intent.succeeded`, `push`): 1..255 characters, no NUL. */
  eventType: string;
  /** When Breakwater received it (ms since the epoch). */
  receivedAt: number;
  /** When the sender says the event happened (ms since the epoch), or null when it does not say. */
  occurredAt: number | null;
  /** The raw body as received, as UTF-8 text (kept exactly, NUL characters included). */
  body: string;
}

/** A stored delivery. */
export interface InboxRecord extends InboxDelivery {
  /** `whk_` + UUIDv7: sorts by acceptance time. */
  id: string;
  /** The job handling it: the one enqueued at acceptance, or the latest replay's. */
  jobId: string;
  /** How many times it was replayed (0 after acceptance). */
  replays: number;
}

/** Filter of {@link WebhookInboxStore.listWebhooks}; results are newest first (by id). */
export interface InboxFilter {
  source?: string;
  /** Keyset pagination: only deliveries with an id smaller than this one. */
  beforeId?: string;
  /** At most this many (default 100, at most 1000). */
  limit?: number;
}

/**
 * The job to enqueue for a delivery: a {@link NewJob}, or a function of the inbox id the delivery gets, so
 * the job's payload can carry it (e.g. `(inboxId) => ({ ...job, payload: { inbox_id: inboxId } })`). The
 * inbox never changes the payload: a plain `NewJob` is stored as given.
 *
 * The function is called once per call, synchronously and before anything is written (never inside a
 * transaction): for an accept it is called before the store knows whether the delivery is a duplicate, and
 * its result is dropped when it is. It must not have side effects. The job must not carry an
 * `idempotencyKey` (the inbox's `(source, eventId)` is the deduplication, and a replay needs a new job);
 * `orderingKey` is kept (e.g. the order id, so one order's events run one at a time in arrival order).
 */
export type InboxJob = NewJob | ((inboxId: string) => NewJob);

/**
 * Storage of webhook deliveries. Each method is one atomic step on the backend; after the store's `close()`
 * every method rejects with an Error.
 */
export interface WebhookInboxStore {
  /**
   * In one transaction: inserts the delivery unless its `(source, eventId)` is stored already, and enqueues
   * its job (notifying `job_available`). A duplicate inserts and enqueues nothing and answers the stored
   * record (`duplicate: true`), however many accepts of one event run at once (a unique constraint decides,
   * never a check-then-insert). Resolves only once the transaction is durable.
   * @throws BreakwaterError `invalid_payload` (as a rejection, nothing written, `details.field` names it) for
   *   a bad delivery field; TypeError for a job that is not a NewJob, has an `idempotencyKey`, or a payload
   *   with no JSON form.
   */
  acceptWebhook(delivery: InboxDelivery, job: InboxJob): Promise<{ duplicate: boolean; record: InboxRecord }>;

  /** The delivery of `source` with `eventId`, or undefined. */
  getWebhook(source: string, eventId: string): Promise<InboxRecord | undefined>;

  /** Deliveries, newest first, optionally of one source; keyset-paginated by `beforeId`. */
  listWebhooks(filter?: InboxFilter): Promise<InboxRecord[]>;

  /**
   * The unfinished (`pending` or `in_progress`) jobs of `source`'s deliveries, replays included: the backlog
   * that admission control compares with its limit. Counted through a partial index that holds only those
   * jobs, so it costs the backlog, never the history.
   */
  webhookBacklog(source: string): Promise<number>;

  /**
   * Replays a stored delivery: enqueues a new job for it and points the record at that job, `replays + 1`,
   * in one transaction. The previous job is left as it is. Undefined when the delivery is unknown (nothing
   * written, the job function not called).
   * @throws TypeError as for {@link acceptWebhook}'s job.
   */
  replayWebhook(source: string, eventId: string, job: InboxJob): Promise<InboxRecord | undefined>;
}

function badDelivery(field: string, rule: string): BreakwaterError {
  return new BreakwaterError('invalid_payload', {
    message: `The webhook delivery's ${field} must be ${rule}.`,
    details: { field },
  });
}

/** A key the inbox can store: a non-empty string of at most {@link MAX_INBOX_KEY_LENGTH}, no NUL. */
export function isInboxKey(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.length > 0 &&
    value.length <= MAX_INBOX_KEY_LENGTH &&
    !value.includes('\0')
  );
}

/**
 * Checks a delivery before anything is written (both backends accept the same deliveries; NUL is refused in
 * keys because PostgreSQL text cannot hold it).
 * @throws BreakwaterError `invalid_payload` with `details.field`.
 */
export function checkDelivery(delivery: InboxDelivery): InboxDelivery {
  if (typeof delivery !== 'object' || delivery === null) throw badDelivery('delivery', 'an object');
  const keyRule = `a string of 1 to ${MAX_INBOX_KEY_LENGTH} characters without NUL`;
  if (!isInboxKey(delivery.source)) throw badDelivery('source', keyRule);
  if (!isInboxKey(delivery.eventId)) throw badDelivery('eventId', keyRule);
  if (!isInboxKey(delivery.eventType)) throw badDelivery('eventType', keyRule);
  if (!(typeof delivery.receivedAt === 'number' && Number.isFinite(delivery.receivedAt))) {
    throw badDelivery('receivedAt', 'a finite number of ms since the epoch');
  }
  const { occurredAt } = delivery;
  if (!(occurredAt === null || (typeof occurredAt === 'number' && Number.isFinite(occurredAt)))) {
    throw badDelivery('occurredAt', 'a finite number of ms since the epoch, or null');
  }
  if (typeof delivery.body !== 'string') throw badDelivery('body', 'a string');
  return delivery;
}

/**
 * The job of {@link InboxJob} for the delivery `inboxId`, checked as far as the store must (the rest is the
 * caller's, as for `JobStore.enqueue`).
 * @throws TypeError when it is not a NewJob-shaped object or carries an idempotency key.
 */
export function resolveInboxJob(job: InboxJob, inboxId: string): NewJob {
  const made: unknown = typeof job === 'function' ? job(inboxId) : job;
  if (typeof made !== 'object' || made === null || typeof (made as NewJob).type !== 'string') {
    throw new TypeError('webhook inbox: job must be a NewJob or a function of the inbox id returning one');
  }
  if ((made as NewJob).idempotencyKey !== undefined) {
    throw new TypeError(
      'webhook inbox: a delivery job must not have an idempotencyKey (the inbox deduplicates by event id)',
    );
  }
  return checkNewJob(made as NewJob);
}

/** The page size to read: `limit` floored into `[0, INBOX_LIST_MAX_LIMIT]`; the default when unset or NaN. */
export function inboxListLimit(limit: number | undefined): number {
  if (limit === undefined || Number.isNaN(limit)) return INBOX_LIST_DEFAULT_LIMIT;
  return Math.min(Math.max(Math.floor(limit), 0), INBOX_LIST_MAX_LIMIT);
}
