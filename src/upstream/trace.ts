/**
 * The spans of one upstream request, made only when its span records (an SDK is registered and sampled it):
 *
 * ```
 * upstream <name> <METHOD>      INTERNAL  the whole request through the policies (the caller's span is parent)
 *   │ events: retry (before attempt n > 1), circuit_breaker.rejected
 *   ├ bulkhead.wait             INTERNAL  only when every slot was busy: from queueing to admission or refusal
 *   └ <METHOD>                  CLIENT    one per attempt sent (HTTP semantic conventions), whose context goes
 *                                         out as `traceparent` (the registered propagator's headers)
 * ```
 *
 * Attributes follow the OpenTelemetry HTTP client conventions (`http.request.method`, `url.path`,
 * `url.full` with secret query values masked, `server.address`, `server.port`,
 * `http.request.resend_count`, `http.response.status_code`, `error.type`) plus `breakwater.*` ones.
 * A request whose span does not record (no SDK: the API's no-op) builds none of this; see `upstream.ts`.
 */
import {
  context,
  propagation,
  SpanKind,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { isBreakwaterError, redactText, type BreakwaterError } from '../core/index.js';
import { errorType, failSpan, tracer } from '../core/trace.js';
import type { Policy, PolicyContext } from '../policy/index.js';
import type { ResolvedUpstream } from './options.js';
import type { Outgoing } from './send.js';

const CLIENT = { kind: SpanKind.CLIENT } as const;

/** What the trace reads of the request (the `UpstreamCall`). */
export interface TracedRequest extends Outgoing {
  readonly path: string;
}

export class UpstreamTrace {
  /** The context of the request's span: the parent of its attempts and of the bulkhead wait. */
  private readonly ctx: Context;
  private readonly bulkheadIndex: number;
  private readonly retryIndex: number;
  private readonly breakerIndex: number;
  private wait: Span | undefined;
  /** `error.type` of the last attempt that failed, for the next `retry` event. */
  private lastErrorType: string | undefined;

  constructor(
    readonly span: Span,
    private readonly config: ResolvedUpstream,
    policies: readonly Policy[],
    request: TracedRequest,
  ) {
    this.ctx = trace.setSpan(context.active(), span);
    const { bulkhead, retry, breaker } = config.policies;
    this.bulkheadIndex = bulkhead === undefined ? -1 : policies.indexOf(bulkhead);
    this.retryIndex = retry === undefined ? -1 : policies.indexOf(retry);
    this.breakerIndex = breaker === undefined ? -1 : policies.indexOf(breaker);
    const url = new URL(config.origin);
    span.setAttributes({
      'http.request.method': request.method,
      'url.path': config.basePath + request.path,
      'server.address': url.hostname,
      'server.port': serverPort(url),
      'breakwater.dependency': config.name,
      'breakwater.correlation_id': request.correlationId,
    });
  }

  /**
   * Layer `index` is about to run (`index` = the number of policies: the attempt itself). Entering the layer
   * after the bulkhead means it admitted the call; entering the layer after the retry with attempt > 1 is a
   * retry.
   */
  enter(ctx: PolicyContext, index: number): void {
    if (index === this.bulkheadIndex) {
      const state = this.config.policies.bulkhead!.state();
      // Every slot busy and room in the queue: this call is about to wait.
      if (state.inUse >= state.maxConcurrent && state.queued < state.maxQueue) {
        this.wait = tracer().startSpan(
          'bulkhead.wait',
          { attributes: { 'breakwater.bulkhead.queued': state.queued + 1 } },
          this.ctx,
        );
      }
    } else if (index === this.bulkheadIndex + 1 && this.wait !== undefined) {
      this.wait.setAttribute('breakwater.bulkhead.outcome', 'admitted');
      this.wait.end();
      this.wait = undefined;
    }
    if (index === this.retryIndex + 1 && this.retryIndex >= 0 && ctx.attempt > 1) {
      const attributes: Attributes = { 'breakwater.attempt': ctx.attempt };
      if (this.lastErrorType !== undefined) attributes['error.type'] = this.lastErrorType;
      this.span.addEvent('retry', attributes);
    }
  }

  /** Watches what layer `index` settled with: a breaker's rejection, a bulkhead's refusal while waiting. */
  settled<T>(index: number, outcome: Promise<T>): Promise<T> {
    if (index !== this.breakerIndex && index !== this.bulkheadIndex) return outcome;
    return outcome.then(undefined, (error: unknown) => {
      if (index === this.breakerIndex && isBreakwaterError(error) && error.code === 'circuit_open') {
        this.span.addEvent('circuit_breaker.rejected', breakerAttributes(error));
      } else if (index === this.bulkheadIndex && this.wait !== undefined) {
        this.wait.setAttribute('breakwater.bulkhead.outcome', 'rejected');
        failSpan(this.wait, error);
        this.wait = undefined;
      }
      throw error;
    });
  }

  /**
   * One attempt as a CLIENT span: the request goes out with this span's context in its headers (through the
   * registered propagator), as a copy, so the attempts do not share one header object.
   */
  async attempt<R extends { status: number }>(
    request: TracedRequest,
    ctx: PolicyContext,
    send: (out: Outgoing) => Promise<R>,
  ): Promise<R> {
    const span = tracer().startSpan(request.method, CLIENT, this.ctx);
    const headers: Record<string, string> = { ...request.headers };
    propagation.inject(trace.setSpan(this.ctx, span), headers);
    if (span.isRecording()) {
      const url = new URL(this.config.origin);
      const attributes: Attributes = {
        'http.request.method': request.method,
        'url.full': redactText(this.config.origin + request.fullPath),
        'server.address': url.hostname,
        'server.port': serverPort(url),
      };
      if (ctx.attempt > 1) attributes['http.request.resend_count'] = ctx.attempt - 1;
      span.setAttributes(attributes);
    }
    const out: Outgoing = {
      origin: request.origin,
      method: request.method,
      fullPath: request.fullPath,
      headers,
      payload: request.payload,
      correlationId: request.correlationId,
      attempts: request.attempts,
    };
    try {
      const response = await send(out);
      span.setAttribute('http.response.status_code', response.status);
      span.end();
      return response;
    } catch (error) {
      const status = (error as { status?: unknown } | null)?.status;
      if (typeof status === 'number') span.setAttribute('http.response.status_code', status);
      this.lastErrorType = errorType(error);
      failSpan(span, error, this.lastErrorType);
      throw error;
    }
  }

  /** Ends the request's span with its answer. */
  succeeded(status: number, attempts: number): void {
    this.span.setAttributes({ 'http.response.status_code': status, 'breakwater.attempts': attempts });
    this.span.end();
  }

  /**
   * Ends the request's span with the error the caller gets. `error.type` is the upstream's status when it
   * answered with one (HTTP conventions), else the generic code (`timeout`, `circuit_open`, …).
   */
  failed(error: BreakwaterError, attempts: number): void {
    this.wait?.end();
    const status = error.details?.['upstream_status'];
    const attributes: Attributes = { 'breakwater.attempts': attempts };
    if (typeof status === 'number') attributes['http.response.status_code'] = status;
    const dependencyCode = error.details?.['dependency_code'];
    if (typeof dependencyCode === 'string') attributes['breakwater.dependency_code'] = dependencyCode;
    this.span.setAttributes(attributes);
    failSpan(this.span, error, typeof status === 'number' && status >= 400 ? String(status) : error.code);
  }
}

function serverPort(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

function breakerAttributes(error: BreakwaterError): Attributes {
  const attributes: Attributes = {};
  const state = error.details?.['circuit_state'];
  if (typeof state === 'string') attributes['breakwater.circuit.state'] = state;
  if (error.retryAfterMs !== undefined) attributes['breakwater.retry_after_ms'] = error.retryAfterMs;
  return attributes;
}
