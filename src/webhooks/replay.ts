/**
 * Replay without the application's declarations (the CLI works on the store alone): the new job repeats the
 * job the event last had.
 */
import { webhookPrincipal } from '../core/index.js';
import type { JobStore, NewJob } from '../store/index.js';
import { webhookJobType, type WebhookJobPayload } from './dispatch.js';
import { WEBHOOK_HANDLER_DEFAULTS } from './handlers.js';
import type { InboxRecord, WebhookInboxStore } from './ports.js';

/**
 * Enqueues a stored event's handler again, as `breakwater webhooks replay` does: the new job copies the type,
 * payload, attempts, timeout, priority and ordering key of the event's current job (so it runs the handler
 * the gateway's workers have for it, with the settings it was accepted with), due now. When that job no
 * longer exists, it is rebuilt from the inbox row with the default attempts. Either way it belongs to the
 * source (`webhook:<source>`), as every webhook job does. A gateway replays through
 * `WebhookIngress.replay` instead, which applies the handler's current settings.
 *
 * @returns the inbox row pointing at the new job, or undefined when the event is not stored.
 */
export async function replayStoredWebhook(
  store: Pick<WebhookInboxStore, 'getWebhook' | 'replayWebhook'> & Pick<JobStore, 'get'>,
  source: string,
  eventId: string,
  nowMs: number = Date.now(),
): Promise<InboxRecord | undefined> {
  const record = await store.getWebhook(source, eventId);
  if (record === undefined) return undefined;
  const previous = await store.get(record.jobId);
  const owner = webhookPrincipal(source).id;
  return store.replayWebhook(source, eventId, (inboxId) => {
    if (previous === undefined) {
      const payload: WebhookJobPayload = {
        source,
        eventId: record.eventId,
        eventType: record.eventType,
        inboxId,
      };
      return {
        type: webhookJobType(source),
        payload,
        runAt: nowMs,
        priority: 0,
        maxAttempts: WEBHOOK_HANDLER_DEFAULTS.maxAttempts,
        owner,
      };
    }
    const job: NewJob = {
      type: previous.type,
      payload: previous.payload,
      runAt: nowMs,
      priority: previous.priority,
      maxAttempts: previous.maxAttempts,
      owner,
    };
    if (previous.timeoutMs !== null) job.timeoutMs = previous.timeoutMs;
    if (previous.orderingKey !== null) job.orderingKey = previous.orderingKey;
    return job;
  });
}
