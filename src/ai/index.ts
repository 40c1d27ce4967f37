/**
 * ai/: the OpenAI-compatible gateway (docs/ai-gateway.md): its endpoints (chat completions, embeddings,
 * models), providers, prices, rate and spend limits, retries and first-byte timeouts, fallbacks, streaming. Imports only core, policy and store.
 *
 * For route flows (`dynamic/<route>`): `executeStep`, `runFallbackChain`, `AiLimits` (a limit check with its
 * own rules: give it its own `keyPrefix`), and the types below. For the code that makes API keys:
 * `parsePrincipalAiLimits` (refuse a key's AI limits the gateway cannot apply when the key is made).
 */
export { createAiGateway, DIRECT_STEP, DYNAMIC_PREFIX, type AiGateway } from './gateway.js';
export { AI_GATEWAY_DEFAULTS, type AiGatewayOptions } from './options.js';
export {
  AI_ENDPOINTS,
  AI_ENDPOINT_NAMES,
  CHAT_ENDPOINT,
  EMBEDDINGS_ENDPOINT,
  MAX_EMBEDDING_INPUTS,
  ModelCatalog,
  endpointOf,
  type AiEndpoint,
  type AiEndpointName,
  type EndpointBodyInfo,
  type ModelConfig,
  type ModelsInput,
  type OpenAiModel,
} from './endpoints/index.js';
export {
  AI_OUTCOMES,
  NO_LABEL,
  UNKNOWN_LABEL,
  aiMetricLabels,
  type AiLabelConfig,
  type AiMetricLabels,
} from './metric-labels.js';
export { executeStep, type StepHistory } from './step/execute.js';
export { runFallbackChain } from './step/fallback.js';
export { resolveSettings } from './step/settings.js';
export {
  AI_LIMITS_DEFAULTS,
  AiLimits,
  IN_FLIGHT_RETRY_AFTER_MS,
  rateLimitHeaders,
  type AiLimitsConfig,
  type LimitGrant,
  type RateRule,
  type SpendRule,
} from './limits/limits.js';
export { scopeKey, type LimitTarget, type RuleScope } from './limits/scope.js';
export { BUDGET_THRESHOLDS, type BudgetEvent } from './limits/budget-events.js';
export { combineGrants } from './limits/grants.js';
export { parsePrincipalAiLimits, principalAiLimitsSchema } from './limits/caller-rules.js';
export { callerMetadata, checkModelAllowed } from './caller.js';
export { spendWindowStart, readState as readSpendState, type SpendState } from './limits/spend.js';
export { MemoryCounterStore } from './limits/memory-counters.js';
export { counterRateLimitStore } from './limits/counter-rate-limit-store.js';
export { counterSpendStore, type SpendReservation, type SpendStore } from './limits/spend-store.js';
export {
  REDIS_SPEND_STORE_DEFAULTS,
  RedisSpendStore,
  type RedisSpendStoreOptions,
} from './limits/redis-spend-store.js';
export { createRedisLimits, type RedisLimits, type RedisLimitsOptions } from './limits/redis-limits.js';
export {
  PriceTable,
  costPico,
  estimateMicroUsd,
  formatMicroUsd,
  formatUsd,
  picoToMicro,
  producedMicroUsd,
  usdToMicro,
  BYTES_PER_TOKEN,
  type EstimateInput,
  type ModelPrice,
  type PriceTableInput,
  type TokenPrice,
} from './pricing.js';
export { ProviderRegistry, type Provider, type ProviderConfig } from './providers.js';
export { estimateInput, splitModel } from './body.js';
export { HEADER_BOUNDS, parseMetadata, readOverrides, readRequestHeaders } from './request-headers.js';
export type {
  AiFlow,
  AiLogger,
  AiRequest,
  AiRequestLog,
  AiRouteResolver,
  AiStep,
  BackoffKind,
  FrameSink,
  JsonStepAnswer,
  Metadata,
  MetadataValue,
  ResolvedStepSettings,
  StepAnswer,
  StepContext,
  StepFailure,
  StepOutcome,
  StepSettings,
  StreamStepAnswer,
  Usage,
} from './types.js';
export * from './routes/index.js';
