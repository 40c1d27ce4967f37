/**
 * Handlers as jobs. webhooks/ may not import jobs/
 * (docs/architecture.md#conventions-the-linter-does-not-check), and the inbox row and its job must be
 * written in one transaction by the store, so the ingress builds the store's `NewJob` itself and only asks
 * the jobs runtime to run a type ({@link WebhookJobs}: `createJobs(...)` fits as it is). One job type per
 * source, `webhook.<source>`; its payload names the inbox row, and the run reads the body back from it.
 */
import { BreakwaterError, checkJsonDepth, webhookPrincipal, type ErrorCode } from '../core/index.js';
import type { Backoff } from '../policy/index.js';
import type { NewJob } from '../store/index.js';
import type { AnyWebhookHandler, WebhookContext } from './handlers.js';
import type { InboxRecord, WebhookInboxStore } from './ports.js';
import type { AnyWebhookSource } from './source.js';

/** What a job runtime passes a handler (a subset of jobs' `JobContext`). */
export interface WebhookJobContext {
  payload: unknown;
  jobId: string;
  attempt: number;
  signal: AbortSignal;
}

/** The part of the jobs runtime the ingress uses: `Jobs` from `createJobs` fits. */
export interface WebhookJobs {
  defineJob(
    type: string,
    handler: (context: WebhookJobContext) => unknown,
    options?: { concurrency?: number; backoff?: Backoff },
  ): void;
}

/** The payload of a webhook job: where its event is. Times are ms since the epoch. */
export interface WebhookJobPayload {
  source: string;
  eventId: string;
  eventType: string;
  inboxId: string;
}

/** The job type of a source's events. */
export function webhookJobType(source: string): string {
  return `webhook.${source}`;
}

/** The handlers of each source, by event type, with `*` as the fallback. */
export class HandlerTable {
  private readonly bySource = new Map<string, Map<string, AnyWebhookHandler>>();

  /** @throws RangeError when a handler's source is not declared or its type already has a handler. */
  constructor(sources: ReadonlySet<string>, handlers: readonly AnyWebhookHandler[]) {
    for (const handler of handlers) {
      if (!sources.has(handler.source)) {
        throw new RangeError(
          `onWebhook: source must be a declared source, got '${handler.source}' (declare it with defineWebhookSource)`,
        );
      }
      let types = this.bySource.get(handler.source);
      if (types === undefined) this.bySource.set(handler.source, (types = new Map()));
      if (types.has(handler.eventType)) {
        throw new RangeError(
          `onWebhook(${handler.source}): eventType must have one handler, got a second for '${handler.eventType}'`,
        );
      }
      types.set(handler.eventType, handler);
    }
  }

  /** The handler an event of `eventType` runs: its own, else the source's `*`, else none. */
  find(source: string, eventType: string): AnyWebhookHandler | undefined {
    const types = this.bySource.get(source);
    return types?.get(eventType) ?? types?.get('*');
  }
}

/**
 * The job of one stored event, with the settings of the handler it will run (attempts, timeout) and the
 * source's ordering key. The job has no idempotency key: the inbox row is the deduplication, and a replay
 * must be able to enqueue the same event again. It belongs to its source (`webhook:<source>`, core's
 * `webhookPrincipal`), whoever replays it: only `admin` sees or cancels it over HTTP and MCP
 * (docs/architecture.md#identity-and-ownership).
 */
export function buildJob(
  source: AnyWebhookSource,
  handler: AnyWebhookHandler | undefined,
  meta: { eventId: string; eventType: string; orderingKey: string | undefined },
  inboxId: string,
  now: number,
): NewJob {
  const payload: WebhookJobPayload = {
    source: source.name,
    eventId: meta.eventId,
    eventType: meta.eventType,
    inboxId,
  };
  const job: NewJob = {
    type: webhookJobType(source.name),
    payload,
    runAt: now,
    priority: 0,
    maxAttempts: handler?.maxAttempts ?? 1,
    owner: webhookPrincipal(source.name).id,
  };
  if (handler?.timeoutMs !== undefined) job.timeoutMs = handler.timeoutMs;
  if (meta.orderingKey !== undefined) job.orderingKey = meta.orderingKey;
  return job;
}

/**
 * Parses a stored or received body into the event: JSON nested at most `MAX_JSON_DEPTH` (64) levels (before
 * the schema or a handler walks it), then the source's schema.
 * @throws BreakwaterError `invalid_payload` (400) saying what is wrong; with `details.issues` from the schema,
 *   `details.reason: 'too_deep'` for the depth.
 */
export function parseEvent(source: AnyWebhookSource, body: string): unknown {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    throw invalidPayload(`The ${source.name} webhook body is not valid JSON.`);
  }
  checkJsonDepth(parsed, `The ${source.name} webhook body`);
  if (source.schema === undefined) return parsed;
  const result = source.schema.safeParse(parsed);
  if (result.success) return result.data;
  const issues = issuesOf(result.error);
  const first = issues[0];
  throw invalidPayload(
    first === undefined
      ? `The ${source.name} webhook body does not match its schema.`
      : `The ${source.name} webhook body does not match its schema: ${first.path} ${first.message}.`,
    { issues },
  );
}

/** At most this many schema issues go into an answer. */
const MAX_ISSUES = 10;

function issuesOf(error: unknown): { path: string; message: string }[] {
  const issues = (error as { issues?: unknown } | null)?.issues;
  if (!Array.isArray(issues)) return [];
  return issues.slice(0, MAX_ISSUES).map((issue: { path?: unknown; message?: unknown }) => ({
    path: Array.isArray(issue.path) && issue.path.length > 0 ? `/${issue.path.map(String).join('/')}` : '/',
    message: typeof issue.message === 'string' ? issue.message : 'is not valid',
  }));
}

export function invalidPayload(message: string, details?: Record<string, unknown>): BreakwaterError {
  return new BreakwaterError('invalid_payload', { message, ...(details === undefined ? {} : { details }) });
}

/**
 * The job handler of a source: reads the event back from the inbox, parses it, and runs the handler of its
 * type. A missing row or a body that no longer parses fails the job for good (`not_found`,
 * `invalid_payload`: a retry cannot help); the handler's own failures are the jobs runtime's to classify.
 */
export function runWebhookJob(
  store: Pick<WebhookInboxStore, 'getWebhook'>,
  source: AnyWebhookSource,
  handlers: HandlerTable,
): (context: WebhookJobContext) => Promise<unknown> {
  return async ({ payload, jobId, attempt, signal }) => {
    const p = payload as Partial<WebhookJobPayload>;
    if (typeof p?.eventId !== 'string')
      throw permanent('invalid_payload', `Job ${jobId} names no webhook event.`);
    const record = await store.getWebhook(source.name, p.eventId);
    if (record === undefined) {
      throw permanent('not_found', `The ${source.name} webhook event ${p.eventId} is not in the inbox.`);
    }
    const handler = handlers.find(source.name, record.eventType);
    if (handler === undefined) return { handled: false, event_type: record.eventType };
    const result = await handler.run(contextOf(source, record, { jobId, attempt, signal }));
    return { handled: true, event_type: record.eventType, result: result ?? null };
  };
}

function contextOf(
  source: AnyWebhookSource,
  record: InboxRecord,
  run: { jobId: string; attempt: number; signal: AbortSignal },
): WebhookContext<unknown> {
  return {
    event: parseEvent(source, record.body),
    eventId: record.eventId,
    eventType: record.eventType,
    occurredAt: record.occurredAt,
    receivedAt: record.receivedAt,
    source: source.name,
    signal: run.signal,
    attempt: run.attempt,
    jobId: run.jobId,
  };
}

function permanent(code: ErrorCode, message: string): BreakwaterError {
  return new BreakwaterError(code, { message, kind: 'permanent' });
}
