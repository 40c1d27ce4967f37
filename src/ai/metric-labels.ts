/**
 * The metric labels of one AI request, bounded by configuration (client-chosen strings never become metric
 * labels: docs/architecture.md#identity-and-ownership). Every distinct label set is a series a metrics
 * registry keeps for the life of the process, so a label taken from a request (a `model` string, a route
 * name) would let any client grow the gateway's memory and its `/metrics` answer without bound.
 */
import { isErrorCode } from '../core/index.js';
import type { AiRequestLog } from './types.js';

/** The label value of anything a client named that the configuration does not (a model, a provider, a route). */
export const UNKNOWN_LABEL = '_unknown';

/** The label value where a request never got that far (refused before a step was chosen). */
export const NO_LABEL = 'none';

/** The route label of a direct `<provider>/<model>` request. */
export const DIRECT_ROUTE_LABEL = 'direct';

/**
 * The labels of `ai_requests_total{route, step, provider, model, outcome}` and of the tokens, cost and duration
 * families (the same without `outcome`).
 */
export interface AiMetricLabels {
  /** A deployed route's name (its version left out: a deploy starts no new series), `direct`, or `_unknown`. */
  readonly route: string;
  /** A deployed route's step name, `direct`, or `none`. */
  readonly step: string;
  /** A configured provider, `_unknown`, or `none`. */
  readonly provider: string;
  /** A priced model (`prices`) or a deployed route step's model, `_unknown`, or `none`. */
  readonly model: string;
  /** One of {@link AI_OUTCOMES}, else `_unknown`. */
  readonly outcome: string;
}

/**
 * The `outcome` label values besides the stable error codes (core `ERROR_CODES`): how an answer ended, and the
 * precise reasons the gateway gives its refusals (`details.reason`, the OpenAI-style `error.code`).
 */
export const AI_OUTCOMES: ReadonlySet<string> = new Set([
  'ok',
  'stream_error',
  'canceled',
  'unknown_provider',
  'unknown_route',
  'invalid_body',
  'invalid_header',
  'model_not_priced',
  'max_tokens_required',
  'no_matching_branch',
  'invalid_deployed_route',
  'store_unavailable',
  'first_byte_timeout',
  'response_too_large',
  'truncated',
  'too_deep',
  'network',
  'fetch_failed',
]);

/** What the labels are bounded by: the gateway's configuration. */
export interface AiLabelConfig {
  /** The configured provider names. */
  readonly providers: ReadonlySet<string>;
  /** The configured models of direct requests, `<provider>/<model>` (the keys of `prices`). */
  readonly models: ReadonlySet<string>;
}

/**
 * The labels of `line`:
 * - a request a deployed route served (`line.route` set) keeps its route's name, step, provider and model:
 *   they come from the route's definition, which an operator deployed;
 * - a direct request: step `direct`; its provider when configured, else `_unknown`; its model when
 *   `<provider>/<model>` is priced, else `_unknown`; `none` for what the request never reached;
 * - `dynamic/<name>` naming no deployed route: route `_unknown`;
 * - the outcome when it is one of {@link AI_OUTCOMES} or an error code, else `_unknown`.
 */
export function aiMetricLabels(line: AiRequestLog, config: AiLabelConfig): AiMetricLabels {
  const outcome = AI_OUTCOMES.has(line.outcome) || isErrorCode(line.outcome) ? line.outcome : UNKNOWN_LABEL;
  if (line.route !== null) {
    return {
      route: line.route.replace(/@\d+$/, ''),
      step: line.step ?? NO_LABEL,
      provider: line.provider ?? NO_LABEL,
      model: line.model ?? NO_LABEL,
      outcome,
    };
  }
  const provider =
    line.provider === null ? NO_LABEL : config.providers.has(line.provider) ? line.provider : UNKNOWN_LABEL;
  const model =
    line.model === null
      ? NO_LABEL
      : provider !== UNKNOWN_LABEL && config.models.has(`${line.provider}/${line.model}`)
        ? line.model
        : UNKNOWN_LABEL;
  return {
    route: outcome === 'unknown_route' ? UNKNOWN_LABEL : DIRECT_ROUTE_LABEL,
    step: line.step === null ? NO_LABEL : DIRECT_ROUTE_LABEL,
    provider,
    model,
    outcome,
  };
}
