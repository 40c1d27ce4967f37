/**
 * The step executor: one model step from the limit check to an answer whose first bytes have arrived
 * (docs/ai-gateway.md). Route flows compose it (`runFallbackChain`, conditions, splits).
 */
import { BreakwaterError, classify } from '../../core/index.js';
import type { PolicyContext } from '../../policy/index.js';
import { endpointOf } from '../endpoints/chat.js';
import { NO_GRANT, type LimitGrant } from '../limits/limits.js';
import { costPico, formatUsd, picoToMicro, producedMicroUsd } from '../pricing.js';
import { SseFrameSplitter, type StreamFindings } from '../stream/sse.js';
import type { AiEndpoint } from '../endpoints/endpoint.js';
import type {
  AiRequest,
  AiStep,
  FrameSink,
  JsonStepAnswer,
  StepContext,
  StepFailure,
  StepOutcome,
  StreamStepAnswer,
  StepAnswer,
  Usage,
} from '../types.js';
import { acquireLimits } from './acquire.js';
import { callProvider, type ChunkReader, type FirstBytes } from './attempt.js';
import { providerFailure } from './provider-error.js';
import { resolveSettings, retryPolicyFor } from './settings.js';
import { scanUsage } from './usage-scan.js';

/** Steps that failed before this one, as the fallback chain passes them on. */
export interface StepHistory {
  readonly failures: readonly StepFailure[];
  readonly attempts: number;
}

const NO_HISTORY: StepHistory = { failures: [], attempts: 0 };

/**
 * Runs `step` for `request` at its endpoint (`request.endpoint`, default chat completions: its body, estimate
 * and usage come from the endpoint's adapter):
 * 1. the caller's own rate rules and budgets (`request.principal.ai`), then the gateway's rate and spend
 *    rules for the step's provider and model (`ctx.limits`, see step/acquire.ts): a refusal throws before the
 *    provider is called;
 * 2. calls to the provider under the step's retry policy (see `retryPolicyFor`), each with the first-byte
 *    timeout; a non-streamed answer is read in full within the attempt (a body cut off is retried too);
 * 3. the answer, before anything is written to the client: for a non-streamed one its cost is known and
 *    settled; a streamed one settles when its frames have been read to the end (or failed).
 *
 * Settings: the step's own, else the request's headers, else the gateway's defaults.
 * Spend settlement: the real cost from the provider's `usage` (rounded up to micro-USD). Without `usage`, a
 * stream (whose client left, or whose provider broke off) settles the estimate of what it produced, its
 * prompt and the text it carried (`producedMicroUsd`), at most its reservation; a non-streamed answer settles
 * its whole reservation. A step that fails before its first byte releases its reservation: provider calls it
 * abandoned (a first-byte timeout) are not counted, though a provider may bill them.
 *
 * @throws BreakwaterError with `details.step`, `details.provider` and `details.attempts`: `invalid_payload`
 *   (unknown provider; `model_not_supported_for_endpoint` when `ctx.models` does not give the step's model
 *   the request's endpoint, before any rule counts it; unpriced model under a spend rule, no `max_tokens`
 *   under one), `rate_limited`,
 *   `spend_limited`, `timeout` (first byte), `upstream_unavailable`, `upstream_error`, `canceled`.
 */
export async function executeStep(
  step: AiStep,
  request: AiRequest,
  ctx: StepContext,
  history: StepHistory = NO_HISTORY,
): Promise<StepAnswer> {
  const provider = ctx.providers.get(step.provider);
  if (provider === undefined) {
    throw failed(
      new BreakwaterError('invalid_payload', {
        message: `There is no provider named ${JSON.stringify(step.provider)}; known: ${ctx.providers.names().join(', ')}.`,
        details: { reason: 'unknown_provider' },
      }),
      step,
      0,
    );
  }
  const endpoint = endpointOf(request);
  // Checked before any limit counts it: a model that cannot serve this endpoint costs nothing.
  const serves = ctx.models?.serves(step.provider, step.model, endpoint.name) ?? endpoint.name === 'chat';
  if (!serves) throw failed(unsupported(step, endpoint), step, 0);
  // No rule configured and none of the caller's own: no check, and no target, estimate or promise made.
  let grant = NO_GRANT;
  if (!ctx.limits.empty || request.principal?.ai !== undefined) {
    try {
      grant = await acquireLimits(step, request, ctx);
    } catch (error) {
      throw failed(limitFailure(error), step, 0);
    }
  }

  const settings = resolveSettings(step, request.overrides, ctx.defaults);
  const payload = endpoint.providerBody(request, step.model);
  const path = provider.basePath + endpoint.providerPath;
  const policy = retryPolicyFor(step, settings, ctx);
  let attempts = 0;
  // Not async: the attempt is callProvider's own promise (one async frame fewer per request in flight).
  const maxBytes = request.stream ? undefined : ctx.maxResponseBytes;
  const callOnce = ({ signal, attempt }: PolicyContext): Promise<FirstBytes> => {
    attempts = attempt;
    return callProvider(provider, payload, settings.timeoutMs, signal, ctx.clock, maxBytes, path);
  };
  try {
    const bytes = await policy.execute(callOnce, request.signal);
    if (bytes.raw !== undefined) {
      return await jsonAnswer(step, attempts, history, bytes, grant, ctx, endpoint.usage);
    }
    return new StreamAnswer(step, attempts, history, bytes, request, grant, ctx);
  } catch (error) {
    await grant.settle(0);
    throw failed(providerFailure(error, provider), step, attempts);
  }
}

/**
 * What the client is told when the limit check threw: a BreakwaterError as it is (a refusal, a 400 from the
 * estimate); a programming error (a TypeError, a RangeError such as a stack overflow) is ours, `internal_error`
 * (500, logged by the route), never blamed on the store; anything else is the store failing (`upstream_unavailable`).
 */
function limitFailure(error: unknown): BreakwaterError {
  if (error instanceof BreakwaterError) return error;
  if (classify(error).kind === 'fatal') return new BreakwaterError('internal_error', { cause: error });
  return new BreakwaterError('upstream_unavailable', {
    message: "The gateway's limit store is unavailable; try again shortly.",
    source: 'ai-limits',
    cause: error,
  });
}

function jsonAnswer(
  step: AiStep,
  attempts: number,
  history: StepHistory,
  bytes: FirstBytes,
  grant: LimitGrant,
  ctx: StepContext,
  readUsage: (value: unknown) => Usage | undefined,
): JsonStepAnswer | Promise<JsonStepAnswer> {
  const raw = bytes.raw!;
  // Only the usage is read; the body goes to the client as it came. Not a JSON object: its cost is unknown.
  const outcome = stepOutcome('ok', scanUsage(raw, readUsage), step, grant.estimateMicroUsd, ctx);
  // One object with a fixed shape (the stream's is a class of the same fields, not a spread of a shared base).
  const answer: JsonStepAnswer = {
    kind: 'json',
    step,
    attempts,
    failedAttempts: history.attempts,
    failures: history.failures,
    firstByteMs: bytes.firstByteMs,
    rateHeaders: grant.rateHeaders,
    status: bytes.status,
    raw,
    outcome,
    done: Promise.resolve(outcome),
  };
  // No rule configured: nothing to settle, so no promise either.
  if (grant === NO_GRANT) return answer;
  return grant.settle(outcome.settledMicroUsd).then(() => answer);
}

/**
 * A streamed answer, and the reader of its provider's body: each chunk is split into frames and written to
 * the sink in the provider connection's own callback (no promise, iterator or generator step per frame).
 */
class StreamAnswer implements StreamStepAnswer, ChunkReader {
  readonly kind = 'stream';
  readonly failedAttempts: number;
  readonly failures: readonly StepFailure[];
  readonly firstByteMs: number;
  readonly rateHeaders: Readonly<Record<string, string>> | undefined;
  readonly done: Promise<StepOutcome>;
  private resolveDone!: (outcome: StepOutcome) => void;
  private readonly findings: StreamFindings = { usage: undefined, done: false, textBytes: 0 };
  /** Spend is reserved: the text streamed is counted, for a settlement without `usage`. */
  private readonly counting: boolean;
  /** Chunks that arrived but are not delivered (the call was aborted) are read for the count only. */
  private muted = false;
  private sink: FrameSink | undefined = undefined;
  private splitter: SseFrameSplitter | undefined = undefined;
  private canceled = false;
  private finished = false;
  /** `sink.end` was called: nothing more goes to the sink. */
  private sinkEnded = false;
  /** A chunk's frames are being written: a `resume()` now answers that write's false (see onChunk). */
  private writing = false;
  private resumedInWrite = false;

  constructor(
    readonly step: AiStep,
    readonly attempts: number,
    history: StepHistory,
    private readonly bytes: FirstBytes,
    private readonly request: AiRequest,
    private readonly grant: LimitGrant,
    private readonly ctx: StepContext,
  ) {
    this.counting = grant.estimateMicroUsd > 0;
    this.failedAttempts = history.attempts;
    this.failures = history.failures;
    this.firstByteMs = bytes.firstByteMs;
    this.rateHeaders = grant.rateHeaders;
    this.done = new Promise<StepOutcome>((resolve) => (this.resolveDone = resolve));
  }

  pipe(sink: FrameSink): void {
    if (this.sink !== undefined) throw new Error('A streamed answer is piped once.');
    this.sink = sink;
    if (this.finished) {
      this.endSink(this.bytes.link.reason);
      return;
    }
    // Once the sink has ended (a cancel from inside `write`), nothing more is written to it.
    this.splitter = new SseFrameSplitter(
      !this.request.includeUsage,
      this.findings,
      { write: (frame) => this.muted || this.sinkEnded || sink.write(frame) },
      this.counting,
    );
    this.bytes.body.read(this);
  }

  resume(): void {
    if (this.writing) this.resumedInWrite = true;
    else if (!this.sinkEnded) this.bytes.body.resume();
  }

  cancel(): void {
    if (this.canceled) return;
    this.canceled = true;
    this.bytes.link.abort(new BreakwaterError('canceled', { message: 'The client went away.' }));
    // A piped stream whose reader is still reading ended above, through its `onEnd`; one whose provider had
    // ended already (its chunks queued behind a full sink) ends here, and one never piped has no sink yet.
    if (this.sink !== undefined) this.endSink(this.bytes.link.reason);
    void this.finish('canceled');
  }

  /** @internal The provider's body (ChunkReader). */
  onChunk(chunk: Buffer): boolean {
    // A sink that drained within its own `write` (and said so with `resume()`) before answering false is not
    // full: pausing on that false would wait for a resume that already came.
    this.writing = true;
    this.resumedInWrite = false;
    try {
      return this.splitter!.push(chunk) || this.resumedInWrite;
    } finally {
      this.writing = false;
    }
  }

  /**
   * @internal A chunk that came from the provider but goes to no one: the call was aborted with it queued
   * (ChunkReader). Its frames are read for the usage and the text count, and not written.
   */
  onDropped(chunk: Buffer): void {
    if (!this.counting || this.splitter === undefined) return;
    this.muted = true;
    this.splitter.push(chunk);
  }

  /** @internal The provider's body ended or broke off (ChunkReader). */
  onEnd(error?: unknown): void {
    if (error === undefined) {
      if (!this.sinkEnded) this.splitter!.end();
      if (!this.bytes.closeDelimited || this.findings.done) {
        this.endSink(undefined);
        void this.finish('ok');
        return;
      }
      // Its end may have been a reset (see FirstBytes.closeDelimited): without `[DONE]` it is not whole.
      const provider = this.step.provider;
      error = new BreakwaterError('upstream_unavailable', {
        message: `The provider ${provider} closed the connection before its stream was complete.`,
        source: provider,
        details: { provider, reason: 'truncated' },
      });
    }
    this.endSink(error);
    // The call's link aborts only when the client left (or `cancel()`); a provider's failure leaves it be.
    void this.finish(this.bytes.link.aborted ? 'canceled' : 'stream_error');
  }

  private endSink(error: unknown): void {
    if (this.sinkEnded) return;
    this.sinkEnded = true;
    this.sink!.end(error);
  }

  private async finish(result: StepOutcome['outcome']): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    if (result !== 'ok') this.bytes.link.abort();
    this.bytes.link.dispose();
    // Without the provider's usage: what the stream produced, never more than was reserved.
    const grant = this.grant;
    let unknownMicro = grant.estimateMicroUsd;
    const price = this.counting ? this.ctx.prices.price(this.step.provider, this.step.model) : undefined;
    if (this.findings.usage === undefined && price !== undefined) {
      const produced = producedMicroUsd(
        endpointOf(this.request).estimate(this.request).promptBytes,
        this.findings.textBytes,
        price,
      );
      unknownMicro = Math.min(produced, unknownMicro);
    }
    const outcome = stepOutcome(result, this.findings.usage, this.step, unknownMicro, this.ctx);
    await grant.settle(outcome.settledMicroUsd);
    this.resolveDone(outcome);
  }
}

/**
 * What a step's end settles: the real cost of `usage` when it and the model's price are known, else
 * `unknownMicro` (the reservation, or a stream's estimate of what it produced).
 */
function stepOutcome(
  outcome: StepOutcome['outcome'],
  usage: Usage | undefined,
  step: AiStep,
  unknownMicro: number,
  ctx: StepContext,
): StepOutcome {
  const price = ctx.prices.price(step.provider, step.model);
  const pico = usage !== undefined && price !== undefined ? costPico(usage, price) : undefined;
  return {
    outcome,
    usage,
    costUsd: pico === undefined ? undefined : formatUsd(pico),
    settledMicroUsd: pico === undefined ? unknownMicro : picoToMicro(pico),
  };
}

/** A model asked for an endpoint it does not serve (see `ModelCatalog`): 400, naming the endpoint. */
function unsupported(step: AiStep, endpoint: AiEndpoint): BreakwaterError {
  return new BreakwaterError('invalid_payload', {
    message: `The model ${JSON.stringify(`${step.provider}/${step.model}`)} does not serve POST ${endpoint.path}.`,
    details: { reason: 'model_not_supported_for_endpoint', field: 'model', endpoint: endpoint.path },
  });
}

/** The client's error, with the step, its provider and the calls it made in `details`. */
function failed(error: unknown, step: AiStep, attempts: number): BreakwaterError {
  const e =
    error instanceof BreakwaterError ? error : new BreakwaterError('internal_error', { cause: error });
  return e.withDetails({ step: step.name, provider: step.provider, model: step.model, attempts });
}
