/**
 * The shapes the ingress is built on, made elsewhere: the verifiers (`webhooks/verifiers/`) and the webhook
 * inbox (`store/`). Kept in one place so the rest of the folder imports them from here.
 */
export type { VerifiedWebhook, WebhookHeaders, WebhookVerifier } from './verifiers/index.js';
export type { InboxDelivery, InboxJob, InboxRecord, WebhookInboxStore } from '../store/index.js';
