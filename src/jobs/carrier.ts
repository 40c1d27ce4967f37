/**
 * What an enqueue hands to the job's runs besides the payload: the trace context (so the run's span joins
 * the enqueuer's trace) and the log fields `correlation_id` and `tool` (so the run's log lines name the
 * request that asked for it).
 *
 * It travels inside the payload's JSON column under one reserved top-level key, `$breakwater`, because the
 * job store has no column for it (a `trace_context` column would be the tidier
 * home). Only plain-object payloads carry it; an array or scalar payload runs without it. The key is
 * written only when there is something to carry (a valid span context or a log scope), is stripped from the
 * payload a handler sees, and from the records the `Jobs` API returns.
 */
import { context, propagation, ROOT_CONTEXT, trace, type Context, type Span } from '@opentelemetry/api';
import { LogContext } from '../core/index.js';
import { hasTrace } from '../core/trace.js';
import type { JobRecord } from '../store/index.js';

/** The reserved top-level key of an object payload. */
export const CARRIER_KEY = '$breakwater';

/** What the carrier holds; every member is optional. */
export interface JobCarrier {
  /** The propagator's headers (`traceparent`, `tracestate`, …) of the enqueue's span. */
  trace?: Record<string, string>;
  correlation_id?: string;
  tool?: string;
}

/**
 * `payload` with the carrier of the enqueue (`span`, the current log scope) added, or `payload` itself when
 * there is nothing to carry or it is not a plain object.
 */
export function withCarrier(payload: unknown, span: Span): unknown {
  if (!isPlainObject(payload)) return payload;
  const scope = LogContext.fields();
  const traced = hasTrace(span);
  if (!traced && scope?.correlation_id === undefined && scope?.tool === undefined) return payload;
  const carrier: JobCarrier = {};
  if (traced) {
    const headers: Record<string, string> = {};
    propagation.inject(trace.setSpan(context.active(), span), headers);
    if (Object.keys(headers).length > 0) carrier.trace = headers;
  }
  if (scope?.correlation_id !== undefined) carrier.correlation_id = scope.correlation_id;
  if (scope?.tool !== undefined) carrier.tool = scope.tool;
  if (Object.keys(carrier).length === 0) return payload;
  return { ...payload, [CARRIER_KEY]: carrier };
}

/** The carrier of a stored payload, or `undefined` (members of the wrong type are ignored). */
export function readCarrier(payload: unknown): JobCarrier | undefined {
  if (!isPlainObject(payload)) return undefined;
  const raw = payload[CARRIER_KEY];
  if (!isPlainObject(raw)) return undefined;
  const carrier: JobCarrier = {};
  if (isPlainObject(raw['trace'])) {
    const headers: Record<string, string> = {};
    for (const [key, value] of Object.entries(raw['trace'])) {
      if (typeof value === 'string') headers[key] = value;
    }
    carrier.trace = headers;
  }
  if (typeof raw['correlation_id'] === 'string') carrier.correlation_id = raw['correlation_id'];
  if (typeof raw['tool'] === 'string') carrier.tool = raw['tool'];
  return carrier;
}

/** The context a run's span starts in: the enqueue's, extracted from the carrier, else a new trace. */
export function runParent(carrier: JobCarrier | undefined): Context {
  if (carrier?.trace === undefined) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, carrier.trace);
}

/** `payload` without the carrier (a shallow copy, only when it has one). */
export function withoutCarrier(payload: unknown): unknown {
  if (!isPlainObject(payload) || !Object.hasOwn(payload, CARRIER_KEY)) return payload;
  const { [CARRIER_KEY]: _carrier, ...rest } = payload;
  return rest;
}

/** `record` with its payload's carrier left out (the same object when it has none). */
export function publicRecord<R extends JobRecord | undefined>(record: R): R {
  if (record === undefined) return record;
  const payload = withoutCarrier(record.payload);
  return payload === record.payload ? record : { ...record, payload };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}
