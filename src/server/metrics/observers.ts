/**
 * The event-only observers: rate-limit decisions, webhook deliveries and operation outcomes. Each subscribes
 * to what its part emits and returns one disposable for all its subscriptions.
 */
import type { AiRequestLog } from '../../ai/index.js';
import type { Disposable } from '../../core/index.js';
import type { OperationLedger } from '../../operations/index.js';
import type { RateLimitPolicy } from '../../policy/index.js';
import type { WebhookIngress } from '../../webhooks/index.js';
import { UNKNOWN_SOURCE } from './catalogue.js';
import type { Instruments } from './instruments.js';

/** What `observeRateLimit` reads of a rate-limit policy. */
export type ObservedRateLimit = Pick<RateLimitPolicy, 'name' | 'onDecision'>;
/** What `observeWebhooks` reads of an ingress (any `createWebhookIngress` result fits). */
export type ObservedWebhooks = Pick<WebhookIngress, 'sources' | 'onReceipt' | 'onRejected'>;
/** What `observeOperations` reads of an operation ledger. */
export type ObservedLedger = Pick<OperationLedger, 'onOutcome' | 'onNeedsAttention'>;

/** `rate_limit_decisions_total{limiter, decision}`, labelled by the policy's name (never its keys). */
export function observeRateLimit(m: Instruments, policy: ObservedRateLimit): Disposable {
  const limiter = policy.name;
  m.rateLimitDecisions.inc({ limiter, decision: 'allowed' }, 0);
  m.rateLimitDecisions.inc({ limiter, decision: 'denied' }, 0);
  return policy.onDecision((e) =>
    m.rateLimitDecisions.inc({ limiter, decision: e.decision.allowed ? 'allowed' : 'denied' }),
  );
}

/**
 * `webhook_deliveries_total{source, result}` (accepted, duplicate, rejected; zero from the start for each
 * declared source) and `webhook_rejections_total{source, code}`. A delivery to a path naming no declared
 * source counts under `source="_unknown"`, so a caller cannot add series by inventing names.
 */
export function observeWebhooks(m: Instruments, ingress: ObservedWebhooks): Disposable {
  for (const source of ingress.sources) {
    for (const result of ['accepted', 'duplicate', 'rejected'])
      m.webhookDeliveries.inc({ source, result }, 0);
  }
  return all([
    ingress.onReceipt((r) =>
      m.webhookDeliveries.inc({ source: r.source, result: r.duplicate ? 'duplicate' : 'accepted' }),
    ),
    ingress.onRejected((r) => {
      const source = r.source ?? UNKNOWN_SOURCE;
      m.webhookDeliveries.inc({ source, result: 'rejected' });
      m.webhookRejections.inc({ source, code: r.code });
    }),
  ]);
}

/**
 * `operation_outcomes_total{action, outcome}` (succeeded, failed, unknown: each move of this process to an
 * outcome, so a reconciled operation counts once `unknown`, then once settled) and
 * `operations_unknown_past_deadline_total{action}` (escalations to needs_attention).
 */
export function observeOperations(m: Instruments, ledger: ObservedLedger): Disposable {
  return all([
    ledger.onOutcome(({ record }) =>
      m.operationOutcomes.inc({ action: record.action, outcome: record.state }),
    ),
    ledger.onNeedsAttention(({ record }) => m.operationsPastDeadline.inc({ action: record.action })),
  ]);
}

/** One idempotent disposable for several. */
export function all(subscriptions: readonly Disposable[]): Disposable {
  let active = true;
  return {
    dispose: () => {
      if (!active) return;
      active = false;
      for (const s of subscriptions) s.dispose();
    },
  };
}

/** What `observeAi` reads of an AI gateway: its one line per request. */
export interface ObservedAi {
  onRequest(listener: (line: AiRequestLog) => void): Disposable;
}

/**
 * `ai_requests_total{route, step, provider, model, outcome}`, `ai_tokens_total{…, kind}`,
 * `ai_cost_usd_total{…}` and `ai_request_duration_seconds{…}` from each request's log line. The route label
 * is the route's name without its version (a deploy must not start new series), `direct` for a
 * `<provider>/<model>` request; a request refused before any step has `step`, `provider` and `model` `none`.
 */
export function observeAi(m: Instruments, ai: ObservedAi): Disposable {
  return ai.onRequest((line) => {
    const labels = {
      route: line.route === null ? 'direct' : line.route.replace(/@\d+$/, ''),
      step: line.step ?? 'none',
      provider: line.provider ?? 'none',
      model: line.model ?? 'none',
    };
    m.aiRequests.inc({ ...labels, outcome: line.outcome });
    if (line.prompt_tokens !== null) m.aiTokens.inc({ ...labels, kind: 'prompt' }, line.prompt_tokens);
    if (line.completion_tokens !== null) {
      m.aiTokens.inc({ ...labels, kind: 'completion' }, line.completion_tokens);
    }
    if (line.cached_tokens !== null) m.aiTokens.inc({ ...labels, kind: 'cached' }, line.cached_tokens);
    if (line.cost_usd !== null) m.aiCost.inc(labels, Number(line.cost_usd));
    m.aiDuration.observe(labels, line.latency_ms / 1000);
  });
}
