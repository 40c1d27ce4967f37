import { context, propagation, trace } from '@opentelemetry/api';
import {
  BreakwaterError,
  Deadline,
  EventSource,
  LogContext,
  neverAbortedSignal,
  newId,
  redactText,
} from '../core/index.js';
import { hasTrace, tracer } from '../core/trace.js';
import type {
  CircuitBreakerPolicy,
  CircuitStateChange,
  Next,
  Policy,
  PolicyContext,
} from '../policy/index.js';
import type { FailedRequest } from './dependency-errors.js';
import { resolveUpstream, type ResolvedUpstream } from './options.js';
import { sendOnce, type Outgoing } from './send.js';
import { shareBreakerState, type SharedBreakerState } from './shared-breaker.js';
import { UpstreamTrace } from './trace.js';
import type {
  Upstream,
  UpstreamBreaker,
  UpstreamBreakerStatus,
  UpstreamOptions,
  UpstreamPolicies,
  UpstreamQuery,
  UpstreamRequest,
  UpstreamRequestOptions,
  UpstreamResponse,
  UpstreamResultEvent,
} from './types.js';

/** Methods safe to send twice (RFC 9110, section 9.2.2). */
const IDEMPOTENT_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);
/** Methods that get an `Idempotency-Key` (IETF httpapi idempotency-key draft). */
const WRITE_METHODS: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const METHOD_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const NO_OPTIONS: UpstreamRequestOptions = {};

/**
 * An HTTP client for one dependency, with its policies built once: bulkhead → retry → circuit breaker →
 * timeout (per attempt, shortened to the ambient `Deadline` minus a margin) → undici
 * (docs/policies.md#composing-a-pipeline).
 *
 * - Every request sends `X-Correlation-ID` (given; else the current `LogContext`'s, so a tool call's id
 *   reaches its upstreams; else a new UUIDv7; the same on every attempt) and, on writes (POST, PUT, PATCH,
 *   DELETE) given an `idempotencyKey`, `Idempotency-Key`.
 * - Observed: a failure is logged (`warn`, `upstream request failed`, with `dependency`, `method`, `path`,
 *   `code`, `dependency_code`, `upstream_status`, `attempts`, `duration_ms`; `info` for a caller's cancel)
 *   through the `logger` option or the process logger; a request is traced as `upstream <name> <METHOD>`
 *   with a CLIENT span per attempt whose context is sent as `traceparent` (see `trace.ts`).
 * - Retries apply only to requests safe to send twice: idempotent methods, keyed writes, and requests marked
 *   `idempotent`. A POST or PATCH without a key is sent once, and so is any request given `retry: false`.
 * - A 2xx answer resolves with its body (JSON parsed by content-type, else text). Anything else rejects.
 * - With `breaker.shared`, the breaker's open, isolated and closed decisions are shared with the same-named
 *   upstreams of other instances through the store (`shareBreakerState`) until `close()`.
 *
 * @returns the {@link Upstream}; call `close()` at shutdown.
 * @throws OptionsError (`RangeError`, `invalid_options`) at construction, naming every bad option.
 *
 * Every failure rejects with a `BreakwaterError` whose `code` is the generic one programs branch on
 * (`upstream_unavailable`, `timeout`, `deadline_exceeded`, `circuit_open`, `bulkhead_full`, `upstream_error`,
 * `outcome_unknown`, `canceled`, `internal_error` for a bug), whose `source` is the upstream's name, whose
 * message is the sentence of what happened (timed out, breaker open, busy, failing, rejected, outcome
 * unknown: see `UpstreamErrorTexts`), and whose `details` hold `dependency_code` (default
 * `<name>_service_timeout`, `_unavailable`, `_busy`, `_failing`, `_error` or `<name>_outcome_unknown`), `correlation_id`,
 * `reason`, and `upstream_status` / `upstream_body` when the upstream answered. A write cut off after it may
 * have been written (reset, timeout, 500/502/504) is `outcome_unknown` (outcome `unknown`): reconcile before
 * resending. An abort of the caller's signal is `canceled`. Invalid request arguments (a path without a
 * leading `/`, a body `JSON.stringify` rejects) reject with a TypeError instead.
 */
export function createUpstream(options: UpstreamOptions): Upstream {
  return new UpstreamClient(resolveUpstream(options));
}

class UpstreamClient implements Upstream {
  readonly name: string;
  readonly baseUrl: string;
  readonly breaker: UpstreamBreaker | undefined;
  readonly policies: UpstreamPolicies;
  /** @internal */
  readonly config: ResolvedUpstream;
  /** @internal */
  readonly results = new EventSource<UpstreamResultEvent>();
  readonly onResult = this.results.on;
  /** @internal */
  closed = false;
  /** Span names by method (`upstream gift GET`), made once each. */
  private readonly spanNames = new Map<string, string>();
  private closing: Promise<void> | undefined;
  /** The breaker's sharing (`breaker.shared`), stopped by `close()`. */
  private readonly sharing: SharedBreakerState | undefined;

  constructor(config: ResolvedUpstream) {
    this.config = config;
    this.name = config.name;
    this.baseUrl = config.baseUrl;
    this.policies = config.policies;
    const breaker = config.policies.breaker;
    this.breaker = breaker && new BreakerView(breaker);
    const shared = config.sharedBreaker;
    this.sharing =
      breaker === undefined || shared === undefined
        ? undefined
        : shareBreakerState(breaker, { ...shared, clock: config.clock, logger: config.logger });
  }

  request<T>(request: UpstreamRequest): Promise<UpstreamResponse<T>> {
    if (typeof request !== 'object' || request === null) {
      return Promise.reject(new TypeError(`${this.name}: request must be an object`));
    }
    return this.start<T>(request.method, request.path, request.body, request);
  }

  get<T>(path: string, options?: UpstreamRequestOptions): Promise<UpstreamResponse<T>> {
    return this.start<T>('GET', path, undefined, options);
  }

  post<T>(path: string, body?: unknown, options?: UpstreamRequestOptions): Promise<UpstreamResponse<T>> {
    return this.start<T>('POST', path, body, options);
  }

  put<T>(path: string, body?: unknown, options?: UpstreamRequestOptions): Promise<UpstreamResponse<T>> {
    return this.start<T>('PUT', path, body, options);
  }

  patch<T>(path: string, body?: unknown, options?: UpstreamRequestOptions): Promise<UpstreamResponse<T>> {
    return this.start<T>('PATCH', path, body, options);
  }

  delete<T>(path: string, options?: UpstreamRequestOptions): Promise<UpstreamResponse<T>> {
    return this.start<T>('DELETE', path, undefined, options);
  }

  close(): Promise<void> {
    if (this.closing === undefined) {
      this.closed = true;
      this.sharing?.dispose();
      this.closing = this.config.ownsDispatcher ? this.config.dispatcher.close() : Promise.resolve();
    }
    return this.closing;
  }

  /** @internal One attempt, from the innermost layer of the pipeline. */
  attempt<T>(call: UpstreamCall<T>, ctx: PolicyContext): Promise<UpstreamResponse<T>> {
    call.attempts++;
    return sendOnce<T>(this.config.dispatcher, call, ctx.signal, this.config.maxResponseBytes);
  }

  /** @internal The name of a request's span: `upstream <name> <METHOD>`. */
  spanName(method: string): string {
    let name = this.spanNames.get(method);
    if (name === undefined) this.spanNames.set(method, (name = `upstream ${this.name} ${method}`));
    return name;
  }

  /** @internal */
  emitResult(call: UpstreamCall<unknown>, status: unknown, error: BreakwaterError | undefined): void {
    this.results.emit({
      name: this.name,
      method: call.method,
      path: call.path,
      status: typeof status === 'number' ? status : undefined,
      code: error?.code,
      attempts: call.attempts,
      durationMs: this.config.clock.now() - call.startedAt,
    });
  }

  private start<T>(
    method: unknown,
    path: unknown,
    body: unknown,
    options: UpstreamRequestOptions | undefined,
  ): Promise<UpstreamResponse<T>> {
    let call: UpstreamCall<T>;
    try {
      call = this.prepare<T>(method, path, body, options ?? NO_OPTIONS);
    } catch (error) {
      return Promise.reject(error);
    }
    return call.run();
  }

  /** Checks the arguments and builds everything every attempt sends. @throws TypeError */
  private prepare<T>(
    rawMethod: unknown,
    path: unknown,
    body: unknown,
    o: UpstreamRequestOptions,
  ): UpstreamCall<T> {
    const name = this.name;
    if (typeof rawMethod !== 'string' || !METHOD_TOKEN.test(rawMethod)) {
      throw new TypeError(`${name}: method must be an HTTP method token, got ${String(rawMethod)}`);
    }
    const method = rawMethod.toUpperCase();
    if (typeof path !== 'string' || !path.startsWith('/') || path.startsWith('//')) {
      throw new TypeError(`${name}: path must start with a single '/', got ${String(path)}`);
    }
    const signal = o.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw new TypeError(`${name}: signal must be an AbortSignal`);
    }

    const headers: Record<string, string> = { ...this.config.headers };
    const extra = o.headers;
    if (extra !== undefined) {
      for (const key of Object.keys(extra)) {
        const value = extra[key];
        if (typeof value !== 'string') throw new TypeError(`${name}: header ${key} must be a string`);
        headers[key.toLowerCase()] = value;
      }
    }
    const correlationId =
      o.correlationId ?? headers['x-correlation-id'] ?? LogContext.correlationId() ?? newId();
    if (typeof correlationId !== 'string' || correlationId === '') {
      throw new TypeError(`${name}: correlationId must be a non-empty string`);
    }
    headers['x-correlation-id'] = correlationId;

    const key = o.idempotencyKey;
    if (key !== undefined && (typeof key !== 'string' || key === '')) {
      throw new TypeError(`${name}: idempotencyKey must be a non-empty string`);
    }
    const keyed = key !== undefined && WRITE_METHODS.has(method);
    if (keyed) headers['idempotency-key'] = key;

    const payload = body === undefined ? undefined : (JSON.stringify(body) as string | undefined);
    if (payload !== undefined && headers['content-type'] === undefined) {
      headers['content-type'] = 'application/json';
    }

    let fullPath = this.config.basePath + path;
    if (o.query !== undefined) fullPath = withQuery(fullPath, o.query);

    const safe = IDEMPOTENT_METHODS.has(method) || keyed || o.idempotent === true;
    if (o.retry !== undefined && o.retry !== false) {
      throw new TypeError(`${name}: retry must be false or left out`);
    }
    return new UpstreamCall<T>(
      this,
      safe && o.retry === undefined ? this.config.safe : this.config.writes,
      method,
      path,
      fullPath,
      headers,
      payload,
      correlationId,
      keyed,
      o.idempotent === true,
      signal,
    );
  }
}

/**
 * One request through the pipeline, in one object: the root context the policies receive (the caller's
 * signal, attempt 1, the ambient deadline), the pipeline's innermost `next` (so no closure is made per
 * call), what each attempt sends, and what the error mapping needs to know.
 */
class UpstreamCall<T> implements PolicyContext, Next<UpstreamResponse<T>>, Outgoing, FailedRequest {
  readonly attempt = 1;
  readonly signal: AbortSignal;
  readonly deadlineAt: number;
  readonly origin: string;
  attempts = 0;
  startedAt = 0;
  /** The request's spans, when its span records (an SDK sampled it). */
  trace: UpstreamTrace | undefined;

  constructor(
    private readonly client: UpstreamClient,
    private readonly policies: readonly Policy[],
    readonly method: string,
    readonly path: string,
    readonly fullPath: string,
    readonly headers: Readonly<Record<string, string>>,
    readonly payload: string | undefined,
    readonly correlationId: string,
    readonly keyed: boolean,
    readonly idempotent: boolean,
    readonly callerSignal: AbortSignal | undefined,
  ) {
    this.signal = callerSignal ?? neverAbortedSignal;
    // Read once, as a pipeline does: the policies fit their waits to it (docs/architecture.md#deadlines).
    this.deadlineAt = Deadline.at() ?? Infinity;
    this.origin = client.config.origin;
  }

  invoke(ctx: PolicyContext, index: number): Promise<UpstreamResponse<T>> {
    const policies = this.policies;
    const traced = this.trace;
    if (traced !== undefined) traced.enter(ctx, index);
    if (index < policies.length) {
      let outcome: Promise<UpstreamResponse<T>>;
      try {
        outcome = policies[index]!.run(ctx, this, index + 1);
      } catch (error) {
        // A layer that throws synchronously still yields a rejection, so the layers outside release.
        outcome = Promise.reject(error);
      }
      return traced === undefined ? outcome : traced.settled(index, outcome);
    }
    if (traced === undefined) return this.client.attempt(this, ctx);
    // As `attempt` does, before the traced copy of what goes out is made (it reports `attempts`).
    this.attempts++;
    const { dispatcher, maxResponseBytes } = this.client.config;
    return traced.attempt(this, ctx, (out) => sendOnce<T>(dispatcher, out, ctx.signal, maxResponseBytes));
  }

  async run(): Promise<UpstreamResponse<T>> {
    const client = this.client;
    const { clock, log } = client.config;
    const observed = client.results.hasListeners;
    const logged = log.enabled('warn');
    if (observed || logged) this.startedAt = clock.now();
    // With no SDK this is the API's non-recording span: nothing below builds attributes or contexts for it.
    const span = tracer().startSpan(client.spanName(this.method));
    if (span.isRecording()) {
      this.trace = new UpstreamTrace(span, client.config, this.policies, this);
    } else if (hasTrace(span)) {
      // Sampled out upstream of us: still tell the dependency, so it does not sample on its own.
      propagation.inject(trace.setSpan(context.active(), span), this.headers);
    }
    try {
      if (client.closed) {
        throw new BreakwaterError('upstream_unavailable', { details: { reason: 'upstream_closed' } });
      }
      // Already aborted: nothing is sent and no slot is taken.
      if (this.callerSignal?.aborted) throw this.callerSignal.reason;
      const response = await this.invoke(this, 0);
      if (observed) client.emitResult(this, response.status, undefined);
      if (this.trace !== undefined) this.trace.succeeded(response.status, this.attempts);
      else span.end();
      return response;
    } catch (error) {
      const mapped = client.config.errors.toError(error, this);
      const status = mapped.details?.['upstream_status'];
      if (observed) client.emitResult(this, status, mapped);
      if (this.trace !== undefined) this.trace.failed(mapped, this.attempts);
      else span.end();
      if (logged) this.logFailure(mapped, status, clock.now() - this.startedAt);
      throw mapped;
    }
  }

  private logFailure(error: BreakwaterError, status: unknown, durationMs: number): void {
    const { log, name } = this.client.config;
    const fields: Record<string, unknown> = {
      dependency: name,
      method: this.method,
      path: redactText(this.path),
      code: error.code,
      attempts: this.attempts,
      duration_ms: durationMs,
      correlation_id: this.correlationId,
    };
    const dependencyCode = error.details?.['dependency_code'];
    if (typeof dependencyCode === 'string') fields['dependency_code'] = dependencyCode;
    if (typeof status === 'number') fields['upstream_status'] = status;
    const reason = error.details?.['reason'];
    if (typeof reason === 'string') fields['reason'] = reason;
    log.write(error.code === 'canceled' ? 'info' : 'warn', fields, 'upstream request failed');
  }
}

/** The breaker as `/readyz` sees it: its status plus the last transition (kept from its events). */
class BreakerView implements UpstreamBreaker {
  private last: CircuitStateChange | null = null;

  constructor(readonly policy: CircuitBreakerPolicy) {
    policy.onStateChange((change) => {
      this.last = change;
    });
  }

  get name(): string {
    return this.policy.name;
  }

  state(): UpstreamBreakerStatus {
    // state() first: it applies a due open → half-open transition, which updates `last`.
    const status = this.policy.state();
    return { ...status, lastTransition: this.last };
  }
}

/** `path` with `query` appended (`undefined`/`null` left out, arrays repeated). */
function withQuery(path: string, query: UpstreamQuery): string {
  const params = new URLSearchParams();
  for (const name of Object.keys(query)) {
    const value = query[name];
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) for (const item of value) params.append(name, String(item));
    else params.append(name, String(value));
  }
  const text = params.toString();
  if (text === '') return path;
  return path + (path.includes('?') ? '&' : '?') + text;
}
