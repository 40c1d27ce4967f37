/**
 * The event-only observers: rate-limit decisions, webhook deliveries and operation outcomes. Each subscribes
 * to what its part emits and returns one disposable for all its subscriptions.
 */
import type { AiGateway } from '../../ai/index.js';
import { isErrorCode, type Disposable } from '../../core/index.js';
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
      // The answered error code: one of core's stable codes (a fixed set), anything else `_unknown`.
      m.webhookRejections.inc({ source, code: isErrorCode(r.code) ? r.code : UNKNOWN_SOURCE });
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

/**
 * What `observeAi` reads of an AI gateway (any `createAiGateway` result fits): its one line per request, and
 * the labels of a line, bounded by the gateway's configuration (the gateway knows its providers, prices and
 * routes; the metrics do not).
 */
export type ObservedAi = Pick<AiGateway, 'onRequest' | 'metricLabels'>;

/**
 * `ai_requests_total{route, step, provider, model, outcome}`, `ai_tokens_total{…, kind}`,
 * `ai_cost_usd_total{…}` and `ai_request_duration_seconds{…}` from each request's log line, labelled by
 * `ai.metricLabels(line)`: names from configuration only (a deployed route's name without its version, a
 * configured provider, a priced model), `_unknown` for anything a client invented, `none` for what a request
 * never reached (see `aiMetricLabels` in ai/). So the number of series is bounded by the configuration, not by
 * the traffic.
 */
export function observeAi(m: Instruments, ai: ObservedAi): Disposable {
  return ai.onRequest((line) => {
    const { outcome, ...labels } = ai.metricLabels(line);
    m.aiRequests.inc({ ...labels, outcome });
    if (line.prompt_tokens !== null) m.aiTokens.inc({ ...labels, kind: 'prompt' }, line.prompt_tokens);
    if (line.completion_tokens !== null) {
      m.aiTokens.inc({ ...labels, kind: 'completion' }, line.completion_tokens);
    }
    if (line.cached_tokens !== null) m.aiTokens.inc({ ...labels, kind: 'cached' }, line.cached_tokens);
    if (line.cost_usd !== null) m.aiCost.inc(labels, Number(line.cost_usd));
    m.aiDuration.observe(labels, line.latency_ms / 1000);
  });
}
