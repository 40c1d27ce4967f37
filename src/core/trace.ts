/**
 * Tracing through the OpenTelemetry API only (`@opentelemetry/api`): Breakwater makes spans and never
 * chooses an SDK or an exporter. With no SDK registered every tracer is the API's no-op: `startSpan` returns
 * a non-recording span with an invalid context, so the callers here check `span.isRecording()` before
 * building attributes and set an active context only for a span with a valid one ({@link withSpan}). Register
 * an SDK (`NodeTracerProvider`, an `AsyncLocalStorageContextManager`, the W3C propagator) to see the spans.
 */
import { readFileSync } from 'node:fs';
import {
  context,
  INVALID_SPAN_CONTEXT,
  isSpanContextValid,
  SpanStatusCode,
  trace,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { isBreakwaterError } from './errors.js';
import { redactText } from './redact.js';

/** The instrumentation scope name of every Breakwater span. */
export const TRACER_NAME = 'breakwater';

let cached: Tracer | undefined;

/**
 * Breakwater's tracer, `trace.getTracer('breakwater', <package version>)`, made once. Before an SDK is
 * registered it is the API's proxy, which starts following the SDK as soon as one is registered.
 */
export function tracer(): Tracer {
  return (cached ??= trace.getTracer(TRACER_NAME, packageVersion()));
}

function packageVersion(): string | undefined {
  try {
    // src/core/ and dist/core/ are both two levels below the package root.
    const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
    const version = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === 'string' ? version : undefined;
  } catch {
    return undefined;
  }
}

/** True when `span` belongs to a trace (a recording span, or one a sampler dropped): worth propagating. */
export function hasTrace(span: Span): boolean {
  const spanContext = span.spanContext();
  // The no-op tracer's spans (no SDK registered) all share this object: skip the id checks on the hot path.
  return spanContext !== INVALID_SPAN_CONTEXT && isSpanContextValid(spanContext);
}

/**
 * Runs `fn` with `span` active (its children and the propagated headers follow it), in `parent` (default
 * the active context). A span with no valid context (the no-op tracer's) changes nothing: `fn` runs as it
 * is, and no context is allocated.
 */
export function withSpan<T>(span: Span, fn: () => T, parent?: Context): T {
  if (!hasTrace(span)) return fn();
  return context.with(trace.setSpan(parent ?? context.active(), span), fn);
}

/**
 * A failure's `error.type` (OpenTelemetry semantic conventions: a low-cardinality identifier): a
 * BreakwaterError's code, an upstream answer's status (`"503"`), a Node or undici error's `code`
 * (`ECONNREFUSED`), else the error's class name; `_OTHER` when nothing better is known.
 */
export function errorType(error: unknown): string {
  if (isBreakwaterError(error)) return error.code;
  if (typeof error === 'object' && error !== null) {
    const status = (error as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 600) return String(status);
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
    if (error instanceof Error) return error.name;
  }
  return '_OTHER';
}

/**
 * Marks `span` failed by `error` (status ERROR with the message, credentials masked; `error.type`) and ends
 * it. Exceptions are not recorded as events: a foreign message or stack may hold personal data.
 */
export function failSpan(span: Span, error: unknown, type = errorType(error)): void {
  if (span.isRecording()) {
    const message = error instanceof Error ? error.message : String(error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: redactText(message) });
    span.setAttribute('error.type', type);
  }
  span.end();
}
