/**
 * webhooks/: the webhook ingress (docs/webhooks.md): sources and their verifiers, the pipeline from raw
 * bytes to a stored event and its job, admission control (429, 503), handlers as jobs, replay. Imports only
 * core, policy and store.
 */
export {
  WEBHOOK_SOURCE_DEFAULTS,
  defineWebhookSource,
  type AnyWebhookSource,
  type DeliveryInfo,
  type WebhookRateLimit,
  type WebhookSchema,
  type WebhookSource,
  type WebhookSourceOptions,
} from './source.js';
export {
  WEBHOOK_HANDLER_DEFAULTS,
  onWebhook,
  type AnyWebhookHandler,
  type WebhookContext,
  type WebhookHandler,
  type WebhookHandlerDefinition,
  type WebhookHandlerOptions,
} from './handlers.js';
export {
  WEBHOOK_INGRESS_DEFAULTS,
  createWebhookIngress,
  type WebhookDeclarations,
  type WebhookIngress,
  type AdminGuard,
  type WebhookIngressOptions,
  type WebhookReceipt,
  type WebhookRejection,
} from './ingress.js';
export {
  webhookJobType,
  type WebhookJobContext,
  type WebhookJobPayload,
  type WebhookJobs,
} from './dispatch.js';
export { toWebhookView } from './routes.js';
export * from './verifiers/index.js';
export { replayStoredWebhook } from './replay.js';
