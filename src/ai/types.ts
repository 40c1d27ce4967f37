/**
 * The shapes the AI gateway's parts share (docs/ai-gateway.md): a step (one provider and model with its
 * retry and timeout settings), a request as the gateway read it, and the answer a step gives before its first
 * byte reaches the client. Route flows (`dynamic/<route>`) are built from these with `executeStep` and
 * `runFallbackChain`.
 */
import type { Clock, Principal } from '../core/index.js';
import type { AiEndpoint, AiEndpointName } from './endpoints/endpoint.js';
import type { ModelCatalog } from './endpoints/catalog.js';
import type { AiLimits } from './limits/limits.js';
import type { PriceTable } from './pricing.js';
import type { ProviderRegistry } from './providers.js';

/** How the wait between attempts grows (each with jitter, see `step/settings.ts`). */
export type BackoffKind = 'constant' | 'linear' | 'exponential';

/** A metadata value: the `x-breakwater-metadata` header is a JSON object of these. */
export type MetadataValue = string | number | boolean | null;

/**
 * Request metadata, used by rule scopes and route conditions: the caller's bound metadata, plus what a trusted
 * backend sent in `x-breakwater-metadata` (see ai/caller.ts).
 */
export type Metadata = Readonly<Record<string, MetadataValue>>;

/** Retry and timeout settings of a step; each left out comes from the request headers, then the gateway. */
export interface StepSettings {
  /**
   * Ms from sending the request to the provider's first body byte, per attempt; a started answer is never
   * cut. A non-streamed answer's first byte usually comes with the whole answer, so there it bounds the
   * generation too.
   */
  timeoutMs?: number;
  /** Calls to the provider, the first included (1..5). */
  maxAttempts?: number;
  /** Base wait before a retry, ms (0..5000); the backoff grows it. */
  retryDelayMs?: number;
  backoff?: BackoffKind;
}

/** One model step: `provider`/`model` with its own settings. `name` is what `x-breakwater-step` shows. */
export interface AiStep extends StepSettings {
  name: string;
  /** A provider name from the gateway's `providers`. */
  provider: string;
  /** The provider's own model id (what is sent as `model`). */
  model: string;
}

/** {@link StepSettings} with every value decided. */
export type ResolvedStepSettings = Required<StepSettings>;

/** Token counts of an answer, from the provider's `usage`. */
export interface Usage {
  promptTokens: number;
  completionTokens: number;
  /** Prompt tokens served from the provider's cache (`prompt_tokens_details.cached_tokens`), 0 when absent. */
  cachedTokens: number;
}

/** A request to one of the gateway's endpoints, as the gateway read it. */
export interface AiRequest {
  /** A request id (`x-request-id` on the answer and in the log). */
  readonly id: string;
  /** The endpoint it came to (default chat completions): its body's format, usage and estimate. */
  readonly endpoint?: AiEndpoint;
  /** The client's JSON body, as sent (`model` is the client's `<provider>/<model>` or `dynamic/<route>`). */
  readonly body: Readonly<Record<string, unknown>>;
  readonly stream: boolean;
  /** The client asked for the usage chunk (`stream_options.include_usage`); otherwise it is stripped. */
  readonly includeUsage: boolean;
  /** The caller's metadata (see `callerMetadata`). */
  readonly metadata: Metadata;
  /**
   * Who is calling (`request.principal`, set by the HTTP edge): its own allowed models, rate rules and
   * budgets apply, and spend reservations are capped per principal. Undefined in library use without the
   * edge: served as `PRINCIPALS.local` (no limits of its own, reservations not capped).
   */
  readonly principal?: Principal;
  /** Settings from the `x-breakwater-*` headers. */
  readonly overrides: StepSettings;
  /** Aborts when the client goes away. */
  readonly signal: AbortSignal;
  /** When the gateway received it, ms since the epoch (gateway clock). */
  readonly receivedAt: number;
  /**
   * The flow serving a `dynamic/<route>` request, as `<name>@<version>` (`x-breakwater-route`, the log line):
   * null until the gateway has found it, and for a direct `<provider>/<model>` request. Set by the gateway.
   */
  route: string | null;
}

/** What every step execution needs: built once by `createAiGateway`, shared by every request. */
export interface StepContext {
  readonly providers: ProviderRegistry;
  readonly prices: PriceTable;
  /** The endpoints each model serves (default: every model serves chat completions only). */
  readonly models?: ModelCatalog;
  /** The gateway-wide rate and spend rules, applied to every step before its provider is called. */
  readonly limits: AiLimits;
  /** Gateway-wide settings, used where neither the step nor the request headers say. */
  readonly defaults: ResolvedStepSettings;
  /** Upper bound of any wait between attempts, a provider's `Retry-After` included, ms. */
  readonly maxRetryDelayMs: number;
  /** Largest provider answer read (non-streamed), bytes. */
  readonly maxResponseBytes: number;
  readonly clock: Clock;
  /** Uniform numbers in [0, 1) for jitter. */
  readonly random: () => number;
}

/** How a step's answer ended, known once it has been delivered in full (or has failed). */
export interface StepOutcome {
  /** `ok`, or why delivery stopped: `stream_error` (the provider broke off), `canceled` (the client left). */
  outcome: 'ok' | 'stream_error' | 'canceled';
  usage: Usage | undefined;
  /** Exact cost in USD as a decimal string, or undefined when the model has no price or usage is unknown. */
  costUsd: string | undefined;
  /** The micro-USD settled against the spend rules (the real cost rounded up, or the reservation when unknown). */
  settledMicroUsd: number;
}

/** A step failure before the first byte, as the fallback chain records it. */
export interface StepFailure {
  step: string;
  code: string;
  attempts: number;
}

/** What a step answered, before anything reached the client. */
interface StepAnswerBase {
  readonly step: AiStep;
  /** Provider calls this step made (1 = no retry). */
  readonly attempts: number;
  /** Provider calls made by earlier steps of the chain that failed. */
  readonly failedAttempts: number;
  /** Steps of the chain that failed before this one served. */
  readonly failures: readonly StepFailure[];
  /** Ms from the step's start to the provider's first byte. */
  readonly firstByteMs: number;
  /** Rate decision headers (`x-ratelimit-*`) of the tightest rule that applied, if any. */
  readonly rateHeaders: Readonly<Record<string, string>> | undefined;
  /** Resolves once the answer was delivered (or failed), with usage and cost; never rejects. */
  readonly done: Promise<StepOutcome>;
}

/** A non-streamed answer: the provider's JSON, read in full (cost known). */
export interface JsonStepAnswer extends StepAnswerBase {
  readonly kind: 'json';
  /** The provider's status (2xx). */
  readonly status: number;
  /** The body bytes as the provider sent them. */
  readonly raw: Buffer;
  readonly outcome: StepOutcome;
}

/**
 * Where a streamed answer's frames go (the gateway's route writes them to the client's response). Called
 * synchronously from the provider connection's callbacks: neither method may throw.
 */
export interface FrameSink {
  /**
   * One or more SSE events, whole frames each ending in a blank line (all those of one provider chunk; the
   * usage chunk already removed when the client did not ask for it). False: the sink is full; the provider is
   * paused until the answer's `resume()`.
   */
  write(frame: string): boolean;
  /**
   * The stream is over, after its last `write`: `error` undefined after the provider's clean end (`[DONE]` or
   * its end of body), else what broke it off (the provider failed, or `cancel()`). Called once.
   */
  end(error?: unknown): void;
}

/** A streamed answer: its first bytes arrived; the rest is pushed to the client as it arrives. */
export interface StreamStepAnswer extends StepAnswerBase {
  readonly kind: 'stream';
  /**
   * Starts the frames flowing into `sink`: each as soon as the provider sent it whole, then `sink.end`. Call
   * it once. `done` resolves after `sink.end` (at once when canceled before `pipe`; a later `pipe` gets
   * only `sink.end` with the cancel).
   */
  pipe(sink: FrameSink): void;
  /**
   * Frames flow again after the sink's `write` answered false (the client's socket drained). Called from
   * inside `write`, it cancels that write's false.
   */
  resume(): void;
  /** Stops reading the provider (aborts its request); the outcome becomes `canceled`. */
  cancel(): void;
}

export type StepAnswer = JsonStepAnswer | StreamStepAnswer;

/**
 * A versioned route flow (`dynamic/<route>`), as the `routes` resolver returns it: conditions, splits,
 * limit checks and fallbacks, run with `executeStep` / `runFallbackChain`. It answers before its first byte,
 * or throws a BreakwaterError the gateway answers as problem+json.
 */
export interface AiFlow {
  /** Shown in `x-breakwater-route` and the log as `<name>@<version>` (version when given). */
  readonly name: string;
  readonly version?: number;
  run(request: AiRequest, ctx: StepContext): Promise<StepAnswer>;
}

/** Finds the deployed flow of `dynamic/<name>`; undefined → 404 `not_found`. */
export type AiRouteResolver = (
  name: string,
  metadata: Metadata,
) => AiFlow | undefined | Promise<AiFlow | undefined>;

/** The one structured log line per request (bodies are never logged). */
export interface AiRequestLog {
  request_id: string;
  /** The endpoint called: `chat` (`/v1/chat/completions`) or `embeddings` (`/v1/embeddings`). */
  endpoint: AiEndpointName;
  /** `<name>@<version>` of a dynamic route, or null. */
  route: string | null;
  step: string | null;
  provider: string | null;
  model: string | null;
  stream: boolean;
  status: number;
  /** `ok`, `stream_error`, `canceled`, or the error code the client got (`rate_limited`, `timeout`, …). */
  outcome: string;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cached_tokens: number | null;
  cost_usd: string | null;
  /** Ms from receipt to the answer's end (streams: the last frame). */
  latency_ms: number;
  /** Ms from receipt to the first byte sent to the client; null when refused before. */
  first_byte_ms: number | null;
  /** Provider calls made for this request, across every step tried. */
  attempts: number;
  /** Steps that failed before one served, `<step>:<code>`. */
  failed_steps: string[];
}

/** A pino-compatible logger (`app.log` fits): one `info` line per request. */
export interface AiLogger {
  info(line: AiRequestLog, message: string): void;
}
